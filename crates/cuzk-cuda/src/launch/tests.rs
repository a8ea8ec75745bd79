//! The declarations (`src/decl.rs`) against the kernels' C signatures, read
//! from the manifests' sources without a GPU or nvcc: each unit's text with
//! comments removed and the kernel-defining macros of the unit and of the
//! headers expanded, then every `extern "C" __global__ void` kernel's name
//! and parameter list. The fatbins are not read: nvcc compresses them
//! (`-Xfatbin=-compress-all`, zstd), and this crate has no decompressor.
//! On a GPU, opening a device checks the same declarations against the
//! driver's parameter sizes.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

use super::{compare_params, Declared};
use crate::decl::DECLARED;

/// The kernel sources inside this package (see build.rs).
fn kernels_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("kernels")
}

/// A kernel's C signature: its parameters' types, in order.
#[derive(Debug)]
struct Signature {
    params: Vec<String>,
}

/// Removes comments and joins continued lines (a backslash before the end
/// of the line), keeping string literals as they are.
fn strip(text: &str) -> String {
    let text = text.replace("\\\r\n", " ").replace("\\\n", " ");
    let b = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'"' {
            let end = text[i + 1..].find('"').map_or(b.len(), |e| i + 2 + e);
            out.push_str(&text[i..end]);
            i = end;
        } else if text[i..].starts_with("//") {
            i = text[i..].find('\n').map_or(b.len(), |e| i + e);
        } else if text[i..].starts_with("/*") {
            i = text[i + 2..].find("*/").map_or(b.len(), |e| i + 4 + e);
            out.push(' ');
        } else {
            let c = text[i..].chars().next().expect("in bounds");
            out.push(c);
            i += c.len_utf8();
        }
    }
    out
}

/// A function-like macro: its parameters and body.
#[derive(Clone, Debug)]
struct Macro {
    params: Vec<String>,
    body: String,
}

fn is_ident(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

/// The text between the parenthesis at `open` and its match, and the index
/// past the match.
fn balanced(text: &str, open: usize) -> (&str, usize) {
    let mut depth = 0;
    for (i, c) in text[open..].char_indices() {
        match c {
            '(' => depth += 1,
            ')' => {
                depth -= 1;
                if depth == 0 {
                    return (&text[open + 1..open + i], open + i + 1);
                }
            }
            _ => {}
        }
    }
    panic!("unbalanced parentheses at {:?}", &text[open..]);
}

/// Splits on the commas outside parentheses and angle brackets.
fn split_top(list: &str) -> Vec<String> {
    let mut out = Vec::new();
    let (mut depth, mut start) = (0i32, 0);
    for (i, c) in list.char_indices() {
        match c {
            '(' | '<' => depth += 1,
            ')' | '>' => depth -= 1,
            ',' if depth == 0 => {
                out.push(list[start..i].trim().to_string());
                start = i + 1;
            }
            _ => {}
        }
    }
    out.push(list[start..].trim().to_string());
    out
}

/// The function-like `#define`s of `text` (already stripped), and the text
/// without its preprocessor lines.
fn macros_and_code(text: &str) -> (HashMap<String, Macro>, String) {
    let mut macros = HashMap::new();
    let mut code = String::new();
    for line in text.lines() {
        let t = line.trim_start();
        if let Some(def) = t.strip_prefix("#define") {
            let def = def.trim_start();
            let name_len = def.find(|c: char| !is_ident(c)).unwrap_or(def.len());
            let (name, rest) = def.split_at(name_len);
            if rest.starts_with('(') {
                let (params, after) = balanced(rest, 0);
                let params = split_top(params)
                    .into_iter()
                    .filter(|p| !p.is_empty())
                    .collect();
                macros.insert(
                    name.to_string(),
                    Macro {
                        params,
                        body: rest[after..].to_string(),
                    },
                );
            }
        } else if !t.starts_with('#') {
            code.push_str(line);
            code.push('\n');
        }
    }
    (macros, code)
}

/// Replaces each whole identifier of `body` that names a parameter by its
/// argument, then pastes the tokens around `##`.
fn substitute(m: &Macro, args: &[String]) -> String {
    let mut out = String::new();
    let mut word = String::new();
    let flush = |word: &mut String, out: &mut String| {
        match m.params.iter().position(|p| p == word) {
            Some(i) => out.push_str(args.get(i).map_or("", String::as_str)),
            None => out.push_str(word),
        }
        word.clear();
    };
    for c in m.body.chars() {
        if is_ident(c) {
            word.push(c);
        } else {
            flush(&mut word, &mut out);
            out.push(c);
        }
    }
    flush(&mut word, &mut out);
    let mut pasted = String::new();
    for (i, part) in out.split("##").enumerate() {
        if i == 0 {
            pasted.push_str(part.trim_end());
        } else {
            pasted.push_str(part.trim());
        }
    }
    pasted
}

/// The macros whose expansion defines kernels: a body with `__global__`,
/// or one that invokes such a macro.
fn kernel_macros(macros: &HashMap<String, Macro>) -> Vec<(&str, &Macro)> {
    let mut names: Vec<&str> = Vec::new();
    loop {
        let before = names.len();
        for (name, m) in macros {
            let defines = m.body.contains("__global__")
                || names.iter().any(|n| invocation(&m.body, n, 0).is_some());
            if defines && !names.contains(&name.as_str()) {
                names.push(name);
            }
        }
        if names.len() == before {
            return names.into_iter().map(|n| (n, &macros[n])).collect();
        }
    }
}

/// The first invocation `name(` in `text` from `from`: (start, the open
/// parenthesis).
fn invocation(text: &str, name: &str, from: usize) -> Option<(usize, usize)> {
    let mut at = from;
    while let Some(f) = text[at..].find(name) {
        let start = at + f;
        let end = start + name.len();
        let whole = text[..start]
            .chars()
            .next_back()
            .is_none_or(|c| !is_ident(c))
            && text[end..].chars().next().is_none_or(|c| !is_ident(c));
        let after = text[end..].trim_start();
        if whole && after.starts_with('(') {
            return Some((start, text.len() - after.len()));
        }
        at = end;
    }
    None
}

/// Expands, in `code`, every invocation of a macro whose expansion defines
/// kernels, and the invocations inside the expansions.
fn expand(code: &str, macros: &HashMap<String, Macro>) -> String {
    let kernel_macros = kernel_macros(macros);
    let mut text = code.to_string();
    let mut at = 0;
    loop {
        let first = kernel_macros
            .iter()
            .filter_map(|(name, m)| invocation(&text, name, at).map(|(s, o)| (s, o, *m)))
            .min_by_key(|&(s, _, _)| s);
        let Some((start, open, m)) = first else {
            return text;
        };
        let (args, end) = balanced(&text, open);
        let expansion = substitute(m, &split_top(args));
        text.replace_range(start..end, &expansion);
        at = start;
    }
}

/// The `extern "C" __global__ void` kernels of expanded `code`, by name.
fn kernels_in(code: &str) -> BTreeMap<String, Signature> {
    let mut out = BTreeMap::new();
    let marker = "extern \"C\" __global__ void";
    let mut rest = code;
    while let Some(i) = rest.find(marker) {
        let mut s = &rest[i + marker.len()..];
        // Launch bounds and register caps come before the name.
        let name = loop {
            s = s.trim_start();
            let len = s.find(|c: char| !is_ident(c)).unwrap_or(s.len());
            let (word, after) = s.split_at(len);
            assert!(
                !word.is_empty(),
                "no kernel name at {:?}",
                &s[..s.len().min(80)]
            );
            let after = after.trim_start();
            let open = s.len() - after.len();
            if word.starts_with("__") {
                let (_, end) = balanced(s, open);
                s = &s[end..];
                continue;
            }
            s = &s[open..];
            break word.to_string();
        };
        let (params, end) = balanced(s, 0);
        let params = split_top(params)
            .into_iter()
            .filter(|p| !p.is_empty())
            .collect();
        assert!(
            out.insert(name.clone(), Signature { params }).is_none(),
            "kernel {name} defined twice"
        );
        rest = &s[end..];
    }
    out
}

/// The size of a C parameter of these kernels: pointers and the scalar and
/// struct types they take by value.
fn c_size(param: &str) -> Result<usize, String> {
    if param.contains('*') {
        return Ok(8);
    }
    let words: Vec<&str> = param
        .split_whitespace()
        .filter(|w| !matches!(*w, "const" | "__restrict__"))
        .collect();
    let ty = words[..words.len().saturating_sub(1)].join(" ");
    let ty = ty.strip_prefix("cuzk::").unwrap_or(&ty);
    match ty {
        "uint32_t" => Ok(4),
        "uint64_t" => Ok(8),
        "fr_t" => Ok(32),
        // kernels/ntt/ntt.cu: eight device pointers (ntt.rs, TablesArg).
        "Tables" => Ok(64),
        _ => Err(format!(
            "parameter `{param}`: type `{ty}` has no size in the source test's table"
        )),
    }
}

/// Every `.cuh` under `dir`.
fn headers(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).expect("listing kernels/") {
        let path = entry.expect("a directory entry").path();
        if path.is_dir() {
            out.extend(headers(&path));
        } else if path.extension().is_some_and(|e| e == "cuh") {
            out.push(path);
        }
    }
    out
}

/// Every kernel of every unit this build knows, by unit.
fn source_kernels() -> BTreeMap<&'static str, BTreeMap<String, Signature>> {
    let dir = kernels_dir();
    let mut header_macros = HashMap::new();
    for path in headers(&dir) {
        let text = std::fs::read_to_string(&path).expect("reading a header");
        header_macros.extend(macros_and_code(&strip(&text)).0);
    }
    let mut out = BTreeMap::new();
    for unit in crate::kernels::unit_paths() {
        let text = std::fs::read_to_string(dir.join(unit))
            .unwrap_or_else(|e| panic!("reading kernels/{unit}: {e}"));
        let (mut macros, code) = macros_and_code(&strip(&text));
        for (k, v) in &header_macros {
            macros.entry(k.clone()).or_insert_with(|| v.clone());
        }
        out.insert(unit, kernels_in(&expand(&code, &macros)));
    }
    out
}

/// Checks one declaration against the sources; the error names the kernel.
fn check(
    d: &Declared,
    sources: &BTreeMap<&'static str, BTreeMap<String, Signature>>,
) -> Result<(), String> {
    let unit = sources
        .get(d.unit)
        .ok_or_else(|| format!("kernel {}: kernels/{} is in no manifest", d.name, d.unit))?;
    let sig = unit
        .get(d.name)
        .ok_or_else(|| format!("kernel {} is not in kernels/{}", d.name, d.unit))?;
    let sizes = sig
        .params
        .iter()
        .map(|p| c_size(p).map_err(|e| format!("kernel {}: {e}", d.name)))
        .collect::<Result<Vec<_>, _>>()?;
    compare_params(d, &sizes)
}

#[test]
fn every_declaration_matches_its_kernel_in_the_sources() {
    let sources = source_kernels();
    let problems: Vec<String> = DECLARED
        .iter()
        .filter_map(|d| check(d, &sources).err())
        .collect();
    assert!(problems.is_empty(), "{}", problems.join("\n"));
    let mut names: Vec<&str> = DECLARED.iter().map(|d| d.name).collect();
    names.sort_unstable();
    names.dedup();
    assert_eq!(names.len(), DECLARED.len(), "a kernel declared twice");
}

/// With every feature on, every kernel of the manifests' units has a
/// declaration: nothing is launched by a name the compiler cannot see.
#[cfg(all(feature = "testing", feature = "tuning"))]
#[test]
fn every_kernel_in_the_sources_is_declared() {
    let sources = source_kernels();
    let mut undeclared = Vec::new();
    for (unit, kernels) in &sources {
        for name in kernels.keys() {
            if !DECLARED.iter().any(|d| d.name == name && d.unit == *unit) {
                undeclared.push(format!("{name} (kernels/{unit})"));
            }
        }
    }
    assert!(
        undeclared.is_empty(),
        "no Rust declaration: {}",
        undeclared.join(", ")
    );
    // The reading itself found the kernels (and so would notice one gone).
    let found: usize = sources.values().map(BTreeMap::len).sum();
    assert!(found >= DECLARED.len(), "{found} kernels in the sources");
}

#[test]
fn a_wrong_declaration_is_named_with_both_sizes() {
    let sources = source_kernels();
    let expand = crate::decl::prover_expand_z;
    let wrong_size = Declared {
        name: expand.name(),
        unit: expand.unit(),
        params: &["packed", "len", "others_at", "others", "out"],
        sizes: &[8, 4, 4, 8, 8],
    };
    let err = check(&wrong_size, &sources).unwrap_err();
    assert!(
        err.contains(expand.name()) && err.contains("parameter 3 (others) is 4 bytes, declared 8"),
        "{err}"
    );
    let one_short = Declared {
        sizes: &[8, 4, 4, 4],
        params: &["packed", "len", "others_at", "others"],
        ..wrong_size
    };
    let err = check(&one_short, &sources).unwrap_err();
    assert!(
        err.contains("takes 5 parameters, its Rust declaration 4"),
        "{err}"
    );
    let elsewhere = Declared {
        unit: "prover/gather.cu",
        ..wrong_size
    };
    let err = check(&elsewhere, &sources).unwrap_err();
    assert!(err.contains("not in kernels/prover/gather.cu"), "{err}");
}

#[test]
fn macros_expand_into_kernels_with_their_bounds() {
    let text = strip(
        "#define K(NAME, B) extern \"C\" __global__ void B k_##NAME(const int* a, \\\n uint32_t n) {}\n\
         #define TWO(S) K(S, __launch_bounds__(64, 2)) K(S##_x, )\n\
         TWO(g1) // a comment\n",
    );
    let (macros, code) = macros_and_code(&text);
    let kernels = kernels_in(&expand(&code, &macros));
    let names: Vec<&String> = kernels.keys().collect();
    assert_eq!(names, ["k_g1", "k_g1_x"]);
    assert_eq!(kernels["k_g1"].params, ["const int* a", "uint32_t n"]);
}
