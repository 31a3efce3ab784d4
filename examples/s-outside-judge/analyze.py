#!/usr/bin/python3
"""Per setting and writer mode: mean start-up latency (per-run means), 95% CI, ratio vs default."""
import glob, os, re, math, sys
from scipy import stats
OUT = '/tmp/souter/out'
timeouts = []
runs = {}  # (mode, wbt) -> list of (label, [times])
for d in sorted(glob.glob(OUT + '/r*-*')):
    if not os.path.isdir(d): continue
    label = os.path.basename(d)
    m = re.match(r'r(\d+)-([ABC])-(\d+)-(capped|uncapped)$', label)
    if not m: continue
    log = open(d + '/log', errors='replace').read()
    if 'Latency statistics' not in log:  # incomplete, or stopped by S's 120 s timeout
        if 'Too long startup' in log:
            t = [float(x) for x in re.findall(r'Start-up time: #* ?([0-9.]+) sec', log)]
            timeouts.append((m[4], int(m[3]), label, t))
        continue
    t = [float(x) for x in re.findall(r'Start-up time: #* ?([0-9.]+) sec', log)]
    info = open(d + '/info').read()
    runs.setdefault((m[4], int(m[3])), []).append((label, t, info))

def mean_ci(xs):
    n = len(xs); m = sum(xs) / n
    if n < 2: return m, float('nan'), float('nan'), n
    s = stats.tstd(xs); h = stats.t.ppf(0.975, n - 1) * s / math.sqrt(n)
    return m, m - h, m + h, n

def ratio(a, b):  # b / a, delta method on log ratio, Welch-Satterthwaite df; Welch t-test p
    ma, mb = sum(a)/len(a), sum(b)/len(b)
    va, vb = stats.tvar(a)/len(a)/ma**2, stats.tvar(b)/len(b)/mb**2
    se = math.sqrt(va + vb)
    df = (va + vb)**2 / (va**2/(len(a)-1) + vb**2/(len(b)-1)) if va + vb > 0 else 1e9
    q = stats.t.ppf(0.975, df)
    r = mb / ma
    p = stats.ttest_ind(b, a, equal_var=False).pvalue
    return r, r*math.exp(-q*se), r*math.exp(q*se), p

lines = []
P = lines.append
P('| writers (S) | wbt_lat_usec | runs | start-ups | mean of run means (s) | 95% CI (s) | all start-ups: mean, median, min–max (s) | ratio vs 75000 | 95% CI | Welch p (run means) | pooled start-ups: ratio, 95% CI, Welch p |')
P('|---|---|---|---|---|---|---|---|---|---|---|')
for mode in ('capped', 'uncapped'):
    base = [sum(t)/len(t) for _, t, _ in runs.get((mode, 75000), [])]
    for v in (75000, 2000, 512):
        rs = runs.get((mode, v), [])
        if not rs: continue
        rm = [sum(t)/len(t) for _, t, _ in rs]
        allt = sorted(x for _, t, _ in rs for x in t)
        m, lo, hi, n = mean_ci(rm)
        med = allt[len(allt)//2] if len(allt) % 2 else (allt[len(allt)//2-1]+allt[len(allt)//2])/2
        if v != 75000 and len(base) >= 2 and len(rm) >= 2:
            r, rlo, rhi, p = ratio(base, rm)
            rat = f'{r:.3f}× | {rlo:.3f}–{rhi:.3f} | {p:.2f}'
            ball = [x for _, t, _ in runs[(mode, 75000)] for x in t]
            r2, lo2, hi2, p2 = ratio(ball, allt)
            rat += f' | {r2:.3f}×, {lo2:.3f}–{hi2:.3f}, p {p2:.2f}'
        else:
            rat = '1 (default) | | | '
        P(f'| 2, {"capped 4000 KB/s (S auto, rotational)" if mode=="capped" else "uncapped (max_write 0)"} | {v} | {n} | {len(allt)} | {m:.3f} | {lo:.3f}–{hi:.3f} | {sum(allt)/len(allt):.3f}, {med:.3f}, {allt[0]:.3f}–{allt[-1]:.3f} | {rat} |')
P('')
P('Per run (label = round-setting-wbt-mode; start-up times in s; load average at start):')
P('')
for k in sorted(runs):
    for label, t, info in runs[k]:
        la = re.search(r'start \S+ .*load average: ([0-9.]+)', info)
        P(f'- {label}: ' + ', '.join(f'{x:.3f}' for x in t) + f' (mean {sum(t)/len(t):.3f}; load1 {la[1] if la else "?"})')
if timeouts:
    P('')
    P('Runs stopped by S (a start-up exceeded MAX_STARTUP = 120 s; S kills it, stops, prints no statistics; left out of the table above):')
    P('')
    for mode, v, label, t in timeouts:
        P(f'- {label}: start-ups ' + ', '.join(f'{x:.3f}' for x in t) + ' (last one killed at the timeout)')
    P('')
    P('Sensitivity (timed-out runs counted, their killed start-up as 120 s, a lower bound; run mean over their start-ups):')
    P('')
    for mode, v, label, t in timeouts:
        tt = [min(x, 120.0) for x in t]
        runs.setdefault((mode, v), []).append((label + '(timeout)', tt, ''))
    for mode in sorted({m for m, *_ in timeouts}):
        base = [sum(t)/len(t) for _, t, _ in runs.get((mode, 75000), [])]
        for v in (75000, 2000, 512):
            rm = [sum(t)/len(t) for _, t, _ in runs.get((mode, v), [])]
            m_, lo, hi, n = mean_ci(rm)
            line = f'- {mode}, wbt {v}: mean of {n} run means {m_:.3f} s (95% CI {lo:.3f}–{hi:.3f})'
            if v != 75000 and len(rm) >= 2 and len(base) >= 2:
                r, rlo, rhi, p = ratio(base, rm)
                line += f'; ratio {r:.3f}× (95% CI {rlo:.3f}–{rhi:.3f}), Welch p {p:.2f}'
                u = stats.mannwhitneyu(rm, base, alternative='two-sided')
                line += f'; Mann–Whitney U p {u.pvalue:.2f} on run means'
            P(line)
print('\n'.join(lines))
