#!/usr/bin/env python3
"""Draws an engine TIMELINE (JSON lines from `cuzk porep-c2 --timeline FILE`
or the sweep) as an SVG chart: one row per partition (synthesis, waiting for
the prover, proving, epilogue) and, on top, what the prover (the GPU) does
when. Prints the busy fractions it reads off the events.

usage: timeline_svg.py TIMELINE.jsonl OUT.svg [--title TEXT]
No dependencies beyond the standard library."""

import json
import sys

COLORS = {
    "synthesis": "#4e79a7",
    "waiting": "#d3d3d3",
    "proving": "#e15759",
    "epilogue": "#59a14f",
}


def intervals(events):
    """(job, partition) -> {phase: (start_s, end_s)}."""
    by = {}
    for e in events:
        by.setdefault((e["job"], e["partition"]), {})[e["event"]] = e["t_us"] / 1e6
    rows = {}
    for key, ev in sorted(by.items()):
        r = {}
        for phase, a, b in [
            ("synthesis", "synthesis_start", "synthesis_end"),
            ("waiting", "synthesis_end", "prove_start"),
            ("proving", "prove_start", "prove_end"),
            ("epilogue", "epilogue_start", "epilogue_end"),
        ]:
            if a in ev and b in ev:
                r[phase] = (ev[a], ev[b])
        rows[key] = r
    return rows


def union_length(spans):
    total, end = 0.0, None
    for a, b in sorted(spans):
        if end is None or a > end:
            total += b - a
            end = b
        elif b > end:
            total += b - end
            end = b
    return total


def main(argv):
    args = [a for a in argv[1:] if not a.startswith("--")]
    title = "cuzk engine timeline"
    if "--title" in argv:
        title = argv[argv.index("--title") + 1]
        args = [a for a in args if a != title]
    if len(args) != 2:
        sys.exit(__doc__)
    events = [json.loads(line) for line in open(args[0]) if line.strip()]
    rows = intervals(events)
    t_end = max(e["t_us"] for e in events) / 1e6
    proving = [r["proving"] for r in rows.values() if "proving" in r]
    synth = [r["synthesis"] for r in rows.values() if "synthesis" in r]
    gpu_busy = union_length(proving) / t_end
    mean_synth = sum(b - a for a, b in synth) / t_end
    summary = (
        f"wall {t_end:.1f} s, {len(rows)} partitions; prover busy {100 * gpu_busy:.1f}%; "
        f"mean partitions in synthesis {mean_synth:.2f}"
    )
    print(summary)

    left, top, row_h, width = 110, 60, 14, 900
    scale = width / t_end if t_end else 1
    height = top + (len(rows) + 2) * row_h + 50
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{left + width + 20}" '
        f'height="{height}" font-family="sans-serif" font-size="11">',
        f'<text x="{left}" y="18" font-size="14">{title}</text>',
        f'<text x="{left}" y="36">{summary}</text>',
    ]
    y = top
    out.append(f'<text x="4" y="{y + 10}">prover (GPU)</text>')
    for a, b in proving:
        out.append(
            f'<rect x="{left + a * scale:.1f}" y="{y}" width="{max((b - a) * scale, 0.5):.1f}" '
            f'height="{row_h - 2}" fill="{COLORS["proving"]}"/>'
        )
    y += row_h + 4
    for (job, part), r in rows.items():
        out.append(f'<text x="4" y="{y + 10}">job {job} p{part}</text>')
        for phase, (a, b) in r.items():
            out.append(
                f'<rect x="{left + a * scale:.1f}" y="{y}" '
                f'width="{max((b - a) * scale, 0.5):.1f}" height="{row_h - 2}" '
                f'fill="{COLORS[phase]}"><title>{phase} {b - a:.2f}s</title></rect>'
            )
        y += row_h
    step = 10 ** max(0, len(str(int(t_end))) - 1)
    t = 0
    while t <= t_end:
        x = left + t * scale
        out.append(f'<line x1="{x:.1f}" y1="{top - 4}" x2="{x:.1f}" y2="{y}" stroke="#eee"/>')
        out.append(f'<text x="{x:.1f}" y="{y + 14}" text-anchor="middle">{t}s</text>')
        t += step
    lx = left
    for phase, color in COLORS.items():
        out.append(f'<rect x="{lx}" y="{y + 24}" width="10" height="10" fill="{color}"/>')
        out.append(f'<text x="{lx + 14}" y="{y + 33}">{phase}</text>')
        lx += 110
    out.append("</svg>")
    with open(args[1], "w") as f:
        f.write("\n".join(out) + "\n")


if __name__ == "__main__":
    main(sys.argv)
