//! Writes the o200k rank table (`$OUT_DIR/o200k_table.bin`, see `src/o200k/table.rs`) from the token bytes in
//! `data/o200k_base.bin`, so that the counter looks ranks up in static data instead of building a hash map at run
//! time. No dependencies and one pass over 200,000 tokens: a few tens of milliseconds even unoptimised.

#[path = "src/o200k/table.rs"]
mod table;

fn main() {
    println!("cargo::rerun-if-changed=build.rs");
    println!("cargo::rerun-if-changed=src/o200k/table.rs");
    println!("cargo::rerun-if-changed=data/o200k_base.bin");
    let data = std::fs::read("data/o200k_base.bin").expect("engine/data/o200k_base.bin is readable");
    let (lengths, bytes) = data.split_at(table::TOKENS);
    let total: usize = lengths.iter().map(|&length| usize::from(length)).sum();
    assert_eq!(total, bytes.len(), "the token lengths add up to the token bytes");
    let mut slots = vec![0u64; table::SLOTS];
    let mut offset = 0;
    for (rank, &length) in lengths.iter().enumerate() {
        let length = usize::from(length);
        let token = &bytes[offset..offset + length];
        let hash = table::hash(token);
        let mut slot = table::home(hash);
        while slots[slot] != 0 {
            slot = (slot + 1) % table::SLOTS;
        }
        let rank = u32::try_from(rank).expect("fewer than 2^32 tokens");
        slots[slot] = table::pack(length, offset, rank, table::tag(hash));
        offset += length;
    }
    let out: Vec<u8> = slots.iter().flat_map(|slot| slot.to_le_bytes()).collect();
    let out_dir = std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR");
    std::fs::write(std::path::Path::new(&out_dir).join("o200k_table.bin"), out).expect("OUT_DIR is writable");
}
