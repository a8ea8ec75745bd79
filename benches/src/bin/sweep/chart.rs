//! The sweep's SVG chart: proofs per hour per grid point, with each point's
//! busy fractions under its bar.

use std::fmt::Write as _;

/// A bar chart of proofs per hour per grid point, with each point's busy
/// fractions (synthesis, prove, epilogue) under its bar. Labels are
/// "s1 p2 | f4 auto": the first line the workers, the second the admission.
pub(crate) fn svg_chart(title: &str, bars: &[(String, f64, [f64; 3])]) -> String {
    let (left, right, top, plot_h) = (70.0, 20.0, 50.0, 300.0);
    // Wide enough for the title and the legend even with one bar.
    let width = (left + right + bars.len() as f64 * 100.0).max(880.0);
    let slot = (width - left - right) / bars.len().max(1) as f64;
    let bar_w = (slot * 0.6).min(70.0);
    let height = top + plot_h + 130.0;
    let max = bars.iter().map(|b| b.1).fold(0.0, f64::max).max(1.0);
    // A round axis maximum: 1, 2 or 5 times a power of ten.
    let magnitude = 10f64.powf(max.log10().floor());
    let axis_max = [1.0, 2.0, 5.0, 10.0]
        .iter()
        .map(|m| m * magnitude)
        .find(|&v| v >= max)
        .unwrap_or(10.0 * magnitude);
    let y = |v: f64| top + plot_h * (1.0 - v / axis_max);
    let mut s = String::new();
    let _ = writeln!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{width:.0}" height="{height:.0}" font-family="sans-serif" font-size="12">"#
    );
    let _ = writeln!(
        s,
        r#"<rect width="100%" height="100%" fill="white"/><text x="{left}" y="24" font-size="14" font-weight="bold">{}</text>"#,
        xml_escape(title)
    );
    for i in 0..=5 {
        let v = axis_max * i as f64 / 5.0;
        let _ = writeln!(
            s,
            r##"<line x1="{left}" x2="{:.0}" y1="{y:.1}" y2="{y:.1}" stroke="#ddd"/><text x="{:.0}" y="{:.1}" text-anchor="end">{v:.0}</text>"##,
            width - right,
            left - 6.0,
            y(v) + 4.0,
            y = y(v)
        );
    }
    let _ = writeln!(
        s,
        r#"<text transform="translate(16,{:.0}) rotate(-90)" text-anchor="middle">proofs per hour</text>"#,
        top + plot_h / 2.0
    );
    for (i, (label, value, busy)) in bars.iter().enumerate() {
        let cx = left + slot * (i as f64 + 0.5);
        let x = cx - bar_w / 2.0;
        let _ = writeln!(
            s,
            r##"<rect x="{x:.1}" y="{:.1}" width="{bar_w:.1}" height="{:.1}" fill="#4878a8"/><text x="{cx:.1}" y="{:.1}" text-anchor="middle">{value:.0}</text>"##,
            y(*value),
            top + plot_h - y(*value),
            y(*value) - 4.0
        );
        let mut words = label.split(' ');
        let workers: Vec<&str> = words.by_ref().take(2).collect();
        let admission: Vec<&str> = words.collect();
        for (row, line) in [workers.join(" "), admission.join(" ")].iter().enumerate() {
            let _ = writeln!(
                s,
                r#"<text x="{cx:.1}" y="{:.0}" text-anchor="middle">{}</text>"#,
                top + plot_h + 16.0 + 14.0 * row as f64,
                xml_escape(line)
            );
        }
        for (row, (name, b)) in ["syn", "prv", "epi"].iter().zip(busy).enumerate() {
            let _ = writeln!(
                s,
                r##"<text x="{cx:.1}" y="{:.0}" text-anchor="middle" fill="#555">{name} {:.0}%</text>"##,
                top + plot_h + 48.0 + 14.0 * row as f64,
                100.0 * b
            );
        }
    }
    for (row, line) in [
        "s: synthesis workers, p: prover workers per device, f: partitions in flight, then the host-memory budget.",
        "Under each bar: busy fraction of each stage (synthesis, prove, epilogue) over the run, from the TIMELINE.",
    ]
    .iter()
    .enumerate()
    {
        let _ = writeln!(
            s,
            r##"<text x="{left}" y="{:.0}" fill="#555">{line}</text>"##,
            height - 26.0 + 14.0 * row as f64
        );
    }
    s.push_str("</svg>\n");
    s
}

fn xml_escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}
