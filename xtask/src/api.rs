//! The public API of every library crate as text, one line per item, so that
//! a change to it shows in review and in CI without nightly rustdoc or a
//! published baseline (what `cargo semver-checks` compares against).
//!
//! `cargo xtask api` writes `xtask/api/<crate>.txt`; the test below fails
//! when the sources no longer produce the committed files, naming the lines
//! that differ. `cargo xtask api --count [ROOT]` prints each crate's counts
//! (for another checkout with ROOT).
//!
//! What is listed: every item declared plain `pub` outside `#[cfg(test)]`
//! and outside function bodies — functions with their signatures, methods
//! of inherent impls, structs with their `pub` fields, enums with their
//! variants, traits with their items, constants, statics, type aliases,
//! `pub use` re-exports, `pub mod`s, `#[macro_export]` macros — and every
//! trait impl's header. An item's `cfg`, `derive`, `repr` and
//! `non_exhaustive` attributes are part of its line. Lines are sorted, so
//! moving an item within or between files changes nothing unless its path
//! changes.
//!
//! It is a declaration list, not a reachability analysis: a `pub` item in
//! a private module that nothing re-exports is listed too (the
//! `unreachable_pub` lint is what finds those). Bodies are not read, and
//! items a macro generates are not seen.

use anyhow::{bail, Context, Result};
use quote::ToTokens;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// The crates whose API is recorded: every library under `crates/` that is
/// meant for a registry (cuzk-testkit is `publish = false`).
pub(crate) fn library_crates(root: &Path) -> Result<Vec<(String, PathBuf)>> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(root.join("crates")).context("reading crates/")? {
        let dir = entry?.path();
        let name = dir.file_name().unwrap().to_string_lossy().into_owned();
        let lib = dir.join("src/lib.rs");
        if lib.is_file() && name != "cuzk-testkit" {
            out.push((name, lib));
        }
    }
    out.sort();
    Ok(out)
}

/// The sorted API lines of the crate whose root module is `lib`.
pub(crate) fn crate_api(lib: &Path) -> Result<Vec<String>> {
    let mut lines = BTreeSet::new();
    let walker = Walker { lines: &mut lines };
    walker.file(lib, &lib.with_file_name(""), "crate", "")?;
    Ok(lines.into_iter().collect())
}

/// Counts of one crate's API lines.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct Counts {
    /// Everything but fields and variants.
    pub items: usize,
    pub enums: usize,
    pub non_exhaustive_enums: usize,
    pub structs: usize,
    pub non_exhaustive_structs: usize,
}

pub(crate) fn counts(lines: &[String]) -> Counts {
    let mut c = Counts::default();
    for line in lines {
        let body = strip_attrs(line);
        if body.starts_with("field ") || body.starts_with("variant ") {
            continue;
        }
        c.items += 1;
        let non_exhaustive = line.contains("#[non_exhaustive]");
        if body.starts_with("enum ") {
            c.enums += 1;
            c.non_exhaustive_enums += usize::from(non_exhaustive);
        }
        if body.starts_with("struct ") {
            c.structs += 1;
            c.non_exhaustive_structs += usize::from(non_exhaustive);
        }
    }
    c
}

/// The line without its leading `#[…] ` attributes.
fn strip_attrs(line: &str) -> &str {
    let mut rest = line;
    while rest.starts_with("#[") {
        let mut depth = 0usize;
        let mut end = rest.len();
        for (i, ch) in rest.char_indices() {
            match ch {
                '[' => depth += 1,
                ']' => {
                    depth -= 1;
                    if depth == 0 {
                        end = i + 1;
                        break;
                    }
                }
                _ => {}
            }
        }
        rest = rest[end..].trim_start();
    }
    rest
}

/// `cargo xtask api [--count [ROOT]]`.
pub(crate) fn run(root: &Path, args: &[String]) -> Result<()> {
    match args.first().map(String::as_str) {
        None => write(root),
        Some("--count") => {
            let root = args.get(1).map(PathBuf::from).unwrap_or(root.to_path_buf());
            println!("crate items enums(non_exhaustive) structs(non_exhaustive)");
            for (name, lib) in library_crates(&root)? {
                let c = counts(&crate_api(&lib)?);
                println!(
                    "{name} {} {}({}) {}({})",
                    c.items, c.enums, c.non_exhaustive_enums, c.structs, c.non_exhaustive_structs
                );
            }
            Ok(())
        }
        Some(other) => {
            bail!("api: unknown argument `{other}` (use no argument, or --count [ROOT])")
        }
    }
}

/// Writes `xtask/api/<crate>.txt` for every library crate.
fn write(root: &Path) -> Result<()> {
    let dir = snapshot_dir(root);
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    for (name, lib) in library_crates(root)? {
        let path = dir.join(format!("{name}.txt"));
        std::fs::write(&path, render(&crate_api(&lib)?))
            .with_context(|| format!("writing {}", path.display()))?;
        println!("wrote {}", path.display());
    }
    Ok(())
}

fn snapshot_dir(root: &Path) -> PathBuf {
    root.join("xtask/api")
}

fn render(lines: &[String]) -> String {
    let mut s = String::new();
    for line in lines {
        s.push_str(line);
        s.push('\n');
    }
    s
}

struct Walker<'a> {
    lines: &'a mut BTreeSet<String>,
}

impl Walker<'_> {
    /// Reads the module file `path`, whose child modules' files are under `dir`.
    fn file(self, path: &Path, dir: &Path, module: &str, cfg: &str) -> Result<()> {
        let text =
            std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
        let file = syn::parse_file(&text).with_context(|| format!("parsing {}", path.display()))?;
        let mut walker = self;
        walker.items(&file.items, path, dir, module, cfg)
    }

    fn items(
        &mut self,
        items: &[syn::Item],
        file: &Path,
        dir: &Path,
        module: &str,
        cfg: &str,
    ) -> Result<()> {
        for item in items {
            self.item(item, file, dir, module, cfg)?;
        }
        Ok(())
    }

    fn item(
        &mut self,
        item: &syn::Item,
        file: &Path,
        dir: &Path,
        module: &str,
        cfg: &str,
    ) -> Result<()> {
        use syn::Item;
        let attrs: &[syn::Attribute] = match item {
            Item::Const(i) => &i.attrs,
            Item::Enum(i) => &i.attrs,
            Item::Fn(i) => &i.attrs,
            Item::Impl(i) => &i.attrs,
            Item::Macro(i) => &i.attrs,
            Item::Mod(i) => &i.attrs,
            Item::Static(i) => &i.attrs,
            Item::Struct(i) => &i.attrs,
            Item::Trait(i) => &i.attrs,
            Item::Type(i) => &i.attrs,
            Item::Union(i) => &i.attrs,
            Item::Use(i) => &i.attrs,
            _ => return Ok(()),
        };
        if is_test_only(attrs) {
            return Ok(());
        }
        let cfg = format!("{cfg}{}", cfg_attrs(attrs));
        let head = format!("{cfg}{}", shape_attrs(attrs));
        match item {
            Item::Mod(m) => {
                if is_pub(&m.vis) {
                    self.push(format!("{cfg}mod {module}::{}", m.ident));
                }
                let child = format!("{module}::{}", m.ident);
                let child_dir = dir.join(m.ident.to_string());
                if let Some((_, items)) = &m.content {
                    return self.items(items, file, &child_dir, &child, &cfg);
                }
                let path = match path_attr(attrs) {
                    Some(p) => file.with_file_name("").join(p),
                    None => {
                        let flat = dir.join(format!("{}.rs", m.ident));
                        if flat.is_file() {
                            flat
                        } else {
                            dir.join(m.ident.to_string()).join("mod.rs")
                        }
                    }
                };
                let walker = Walker { lines: self.lines };
                return walker.file(&path, &child_dir, &child, &cfg);
            }
            Item::Fn(f) if is_pub(&f.vis) => {
                self.push(format!("{head}fn {module}::{}", signature(&f.sig)));
            }
            Item::Struct(s) if is_pub(&s.vis) => {
                let path = format!("{module}::{}", s.ident);
                self.push(format!("{head}struct {path}{}", tokens(&s.generics)));
                for (i, field) in s.fields.iter().enumerate() {
                    if is_pub(&field.vis) && !is_test_only(&field.attrs) {
                        let name = field
                            .ident
                            .as_ref()
                            .map_or(i.to_string(), ToString::to_string);
                        self.push(format!("{cfg}field {path}.{name}: {}", tokens(&field.ty)));
                    }
                }
            }
            Item::Enum(e) if is_pub(&e.vis) => {
                let path = format!("{module}::{}", e.ident);
                self.push(format!("{head}enum {path}{}", tokens(&e.generics)));
                for v in &e.variants {
                    let v_attrs = format!("{}{}", cfg_attrs(&v.attrs), shape_attrs(&v.attrs));
                    self.push(format!(
                        "{cfg}variant {path}::{v_attrs}{}{}",
                        v.ident,
                        tokens(&v.fields)
                    ));
                }
            }
            Item::Trait(t) if is_pub(&t.vis) => {
                let path = format!("{module}::{}", t.ident);
                let supertraits = if t.supertraits.is_empty() {
                    String::new()
                } else {
                    format!(": {}", tokens(&t.supertraits))
                };
                self.push(format!(
                    "{head}trait {path}{}{supertraits}",
                    tokens(&t.generics)
                ));
                for ti in &t.items {
                    let line = match ti {
                        syn::TraitItem::Fn(f) => format!("fn {path}::{}", signature(&f.sig)),
                        syn::TraitItem::Type(ty) => {
                            format!("type {path}::{}{}", ty.ident, tokens(&ty.bounds))
                        }
                        syn::TraitItem::Const(c) => {
                            format!("const {path}::{}: {}", c.ident, tokens(&c.ty))
                        }
                        _ => continue,
                    };
                    self.push(format!("{cfg}{line}"));
                }
            }
            Item::Const(c) if is_pub(&c.vis) => {
                self.push(format!(
                    "{head}const {module}::{}: {}",
                    c.ident,
                    tokens(&c.ty)
                ));
            }
            Item::Static(s) if is_pub(&s.vis) => {
                self.push(format!(
                    "{head}static {module}::{}: {}",
                    s.ident,
                    tokens(&s.ty)
                ));
            }
            Item::Type(t) if is_pub(&t.vis) => {
                self.push(format!(
                    "{head}type {module}::{}{} = {}",
                    t.ident,
                    tokens(&t.generics),
                    tokens(&t.ty)
                ));
            }
            Item::Union(u) if is_pub(&u.vis) => {
                self.push(format!("{head}union {module}::{}", u.ident));
            }
            Item::Use(u) if is_pub(&u.vis) => {
                let mut leaves = Vec::new();
                use_leaves(&u.tree, String::new(), &mut leaves);
                for leaf in leaves {
                    self.push(format!("{cfg}use {module}: {leaf}"));
                }
            }
            Item::Macro(m) if has_attr(attrs, "macro_export") => {
                if let Some(name) = &m.ident {
                    self.push(format!("{cfg}macro crate::{name}!"));
                }
            }
            Item::Impl(i) => {
                let self_ty = tokens(&i.self_ty);
                if let Some((_, trait_, _)) = &i.trait_ {
                    self.push(format!(
                        "{cfg}impl{} {} for {module}: {self_ty}",
                        tokens(&i.generics),
                        tokens(trait_)
                    ));
                    return Ok(());
                }
                for ii in &i.items {
                    match ii {
                        syn::ImplItem::Fn(f) if is_pub(&f.vis) && !is_test_only(&f.attrs) => {
                            let f_cfg = cfg_attrs(&f.attrs);
                            self.push(format!(
                                "{cfg}{f_cfg}fn {module}::{self_ty}::{}",
                                signature(&f.sig)
                            ));
                        }
                        syn::ImplItem::Const(c) if is_pub(&c.vis) => {
                            self.push(format!(
                                "{cfg}const {module}::{self_ty}::{}: {}",
                                c.ident,
                                tokens(&c.ty)
                            ));
                        }
                        _ => {}
                    }
                }
            }
            _ => {}
        }
        Ok(())
    }

    fn push(&mut self, line: String) {
        self.lines.insert(line);
    }
}

/// Plain `pub` (not `pub(crate)`, `pub(super)`, `pub(in …)`).
fn is_pub(vis: &syn::Visibility) -> bool {
    matches!(vis, syn::Visibility::Public(_))
}

fn has_attr(attrs: &[syn::Attribute], name: &str) -> bool {
    attrs.iter().any(|a| a.path().is_ident(name))
}

/// `#[cfg(test)]` exactly: compiled only into the crate's own unit tests.
fn is_test_only(attrs: &[syn::Attribute]) -> bool {
    attrs
        .iter()
        .any(|a| a.path().is_ident("cfg") && tokens(&a.meta) == "cfg (test)")
}

fn cfg_attrs(attrs: &[syn::Attribute]) -> String {
    collect_attrs(attrs, &["cfg"])
}

/// The attributes that change what a user may do with the item.
fn shape_attrs(attrs: &[syn::Attribute]) -> String {
    collect_attrs(attrs, &["derive", "repr", "non_exhaustive"])
}

fn collect_attrs(attrs: &[syn::Attribute], names: &[&str]) -> String {
    let mut s = String::new();
    for a in attrs {
        if names.iter().any(|n| a.path().is_ident(n)) {
            s.push_str(&format!("#[{}] ", tokens(&a.meta)));
        }
    }
    s
}

fn path_attr(attrs: &[syn::Attribute]) -> Option<String> {
    attrs.iter().find_map(|a| match &a.meta {
        syn::Meta::NameValue(nv) if nv.path.is_ident("path") => match &nv.value {
            syn::Expr::Lit(syn::ExprLit {
                lit: syn::Lit::Str(s),
                ..
            }) => Some(s.value()),
            _ => None,
        },
        _ => None,
    })
}

/// One string per name a `use` tree brings in (`a::b::{C, D as E}` gives
/// `a::b::C` and `a::b::D as E`).
fn use_leaves(tree: &syn::UseTree, prefix: String, out: &mut Vec<String>) {
    match tree {
        syn::UseTree::Path(p) => use_leaves(&p.tree, format!("{prefix}{}::", p.ident), out),
        syn::UseTree::Name(n) => out.push(format!("{prefix}{}", n.ident)),
        syn::UseTree::Rename(r) => out.push(format!("{prefix}{} as {}", r.ident, r.rename)),
        syn::UseTree::Glob(_) => out.push(format!("{prefix}*")),
        syn::UseTree::Group(g) => {
            for t in &g.items {
                use_leaves(t, prefix.clone(), out);
            }
        }
    }
}

/// `name: <the signature>` (`f: fn f (x : u8) -> u8`; qualifiers such as
/// `const` and `unsafe` are part of the signature).
fn signature(sig: &syn::Signature) -> String {
    format!("{}: {}", sig.ident, tokens(sig))
}

fn tokens<T: ToTokens>(t: &T) -> String {
    t.to_token_stream().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Parses `src` as a crate root in a temporary folder.
    fn check(src: &str, expected: &[&str]) {
        let dir = tempdir();
        let lib = dir.join("lib.rs");
        std::fs::write(&lib, src).unwrap();
        let got = crate_api(&lib).unwrap();
        assert_eq!(got, expected, "API lines of:\n{src}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    fn tempdir() -> PathBuf {
        use std::sync::atomic::{AtomicUsize, Ordering};
        static N: AtomicUsize = AtomicUsize::new(0);
        let dir = std::env::temp_dir().join(format!(
            "xtask-api-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[test]
    fn lists_pub_items_and_leaves_out_private_and_test_ones() {
        check(
            "pub fn f(x: u8) -> u8 { x }\n\
             fn private() {}\n\
             pub(crate) fn internal() {}\n\
             #[cfg(test)] pub fn only_in_tests() {}\n\
             #[derive(Debug)] #[non_exhaustive] pub enum E { A, B(u8) }\n\
             pub struct S { pub a: u32, b: u32 }\n\
             impl S { pub fn new() -> Self { S { a: 0, b: 0 } } fn hidden(&self) {} }\n\
             impl std::fmt::Display for S { fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result { Ok(()) } }\n\
             pub use inner::{X, Y as Z};\n\
             mod inner { pub struct X; pub struct Y; }\n",
            &[
                "#[derive (Debug)] #[non_exhaustive] enum crate::E",
                "field crate::S.a: u32",
                "fn crate::S::new: fn new () -> Self",
                "fn crate::f: fn f (x : u8) -> u8",
                "impl std :: fmt :: Display for crate: S",
                "struct crate::S",
                "struct crate::inner::X",
                "struct crate::inner::Y",
                "use crate: inner::X",
                "use crate: inner::Y as Z",
                "variant crate::E::A",
                "variant crate::E::B(u8)",
            ],
        );
    }

    #[test]
    fn counts_items_enums_and_non_exhaustive_ones() {
        let lines: Vec<String> = [
            "#[non_exhaustive] enum crate::E",
            "enum crate::F",
            "variant crate::E::A",
            "#[derive (Debug)] struct crate::S",
            "field crate::S.a: u32",
            "fn crate::f: fn f ()",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        assert_eq!(
            counts(&lines),
            Counts {
                items: 4,
                enums: 2,
                non_exhaustive_enums: 1,
                structs: 1,
                non_exhaustive_structs: 0,
            }
        );
    }

    /// The committed snapshots are what the sources give: a public API
    /// change must come with its `xtask/api/*.txt` change (`cargo xtask
    /// api`), so review sees it.
    #[test]
    fn public_api_matches_the_committed_snapshots() {
        let root = crate::workspace_root();
        let mut problems = Vec::new();
        for (name, lib) in library_crates(&root).unwrap() {
            let path = snapshot_dir(&root).join(format!("{name}.txt"));
            let now = crate_api(&lib).unwrap();
            let Ok(committed) = std::fs::read_to_string(&path) else {
                problems.push(format!("{}: missing", path.display()));
                continue;
            };
            let committed: BTreeSet<&str> = committed.lines().collect();
            let now_set: BTreeSet<&str> = now.iter().map(String::as_str).collect();
            for gone in committed.difference(&now_set) {
                problems.push(format!("{name}: - {gone}"));
            }
            for new in now_set.difference(&committed) {
                problems.push(format!("{name}: + {new}"));
            }
        }
        assert!(
            problems.is_empty(),
            "the public API differs from xtask/api/ (run `cargo xtask api` and commit the \
             change if it is meant):\n{}",
            problems.join("\n")
        );
    }
}
