import sys, statistics as st, collections
d=collections.defaultdict(list); loads=[]
for line in open(sys.argv[1]):
    f=line.split()
    if len(f)<7: continue
    d[(f[1],f[2])].append(float(f[3])+float(f[4])); loads.append(float(f[6]))
for k in sorted(d): 
    v=d[k]; print(f"{k[0]:4} {k[1]:24} n={len(v):3} median={st.median(v):.3f} mean={st.mean(v):.3f} min={min(v):.2f} max={max(v):.2f}")
print("load", min(loads), max(loads))
