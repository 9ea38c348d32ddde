import re, sys, statistics as st
tool = None; d = {}
for l in open(sys.argv[1]):
    m = re.match(r'(\S+) (\S+) wall_ms.*?cpu_ms=([\d.]+)', l)
    if m: tool = m.group(2); d.setdefault((tool, m.group(1)), []).append(float(m.group(3))); continue
    m = re.match(r'git cpu_ms=([\d.]+)', l)
    if m: d.setdefault((tool, 'git'), []).append(float(m.group(1)))
for (t, k), v in d.items(): print(f'{t:15} {k:22} median {st.median(v):.3f} ms n={len(v)} min {min(v):.3f} max {max(v):.3f}')
