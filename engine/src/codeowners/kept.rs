//! CODEOWNERS rules (design.md#engine), kept by the id of the blob they were parsed from: a blob
//! never changes, so rules found here are exactly what parsing the file again would give, for every
//! repository and commit holding that file. Which blob HEAD's CODEOWNERS is stays a tree lookup per
//! read (git is the source of truth); only the parse is saved.
//!
//! Process-wide, at most [`CAPACITY`] files (the table is emptied when full: files are few and
//! re-parsed in microseconds).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock, PoisonError};

use gix::ObjectId;

use crate::codeowners::CodeOwners;

/// The most CODEOWNERS files kept (one per distinct blob).
pub(crate) const CAPACITY: usize = 1024;

fn table() -> &'static Mutex<HashMap<ObjectId, Arc<CodeOwners>>> {
    static TABLE: OnceLock<Mutex<HashMap<ObjectId, Arc<CodeOwners>>>> = OnceLock::new();
    TABLE.get_or_init(|| Mutex::new(HashMap::new()))
}

/// The rules of the CODEOWNERS blob `id`: kept ones, or `parse`d now and kept.
///
/// # Errors
/// Whatever `parse` returns (nothing is kept then).
pub(crate) fn rules<E>(id: ObjectId, parse: impl FnOnce() -> Result<CodeOwners, E>) -> Result<Arc<CodeOwners>, E> {
    if let Some(kept) = table().lock().unwrap_or_else(PoisonError::into_inner).get(&id) {
        return Ok(Arc::clone(kept));
    }
    let parsed = Arc::new(parse()?);
    let mut table = table().lock().unwrap_or_else(PoisonError::into_inner);
    if table.len() >= CAPACITY {
        table.clear();
    }
    table.insert(id, Arc::clone(&parsed));
    Ok(parsed)
}

/// How many CODEOWNERS files are kept.
#[cfg(test)]
fn kept() -> usize {
    table().lock().unwrap_or_else(PoisonError::into_inner).len()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_blob_is_parsed_once() {
        let id = ObjectId::from_hex(b"0123456789abcdef0123456789abcdef01234567").expect("hex");
        let first = rules(id, || Ok::<_, ()>(crate::codeowners::parse("* @one\n"))).expect("parsed");
        let again = rules(id, || Err(())).expect("kept, not parsed again");
        assert!(Arc::ptr_eq(&first, &again));
        assert_eq!(again.rules[0].owners, vec!["@one".to_owned()]);
        let other = ObjectId::from_hex(b"1123456789abcdef0123456789abcdef01234567").expect("hex");
        assert!(rules(other, || Err::<CodeOwners, _>("unreadable")).is_err(), "a failed parse is not kept");
        assert!(kept() >= 1);
    }
}
