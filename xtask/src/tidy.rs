//! Checks that keep the repository's documents true to its code and its
//! rules, run as tests (`cargo test -p xtask`, so in CI): the crate graph
//! that ARCHITECTURE.md states is the one the `Cargo.toml`s declare; no
//! library reads or sets the environment (settings arrive as
//! configuration; binaries read it and say so in `--help`); no source file
//! or top-level document narrates history ("session 12", "until
//! 2026-12-04": that belongs in docs/lab-notes/); no source file passes
//! ~650 lines unless ARCHITECTURE.md names it with its reason; every
//! relative link of the top-level docs and docs/*.md resolves; no folder
//! of benches/results/ is named by session (`-s12`).

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;
    use std::path::Path;

    /// Workspace-internal normal dependencies (`cuzk-*` under
    /// `[dependencies]`) of every member, read from the manifests.
    fn graph_from_manifests(root: &Path) -> BTreeMap<String, Vec<String>> {
        let workspace = std::fs::read_to_string(root.join("Cargo.toml")).unwrap();
        let members = array_after(&workspace, "members");
        let mut graph = BTreeMap::new();
        for member in members {
            let text = std::fs::read_to_string(root.join(&member).join("Cargo.toml"))
                .unwrap_or_else(|e| panic!("{member}/Cargo.toml: {e}"));
            let name = text
                .lines()
                .find_map(|l| l.strip_prefix("name = "))
                .map(|v| v.trim().trim_matches('"').to_string())
                .unwrap_or_else(|| panic!("{member}/Cargo.toml has no name"));
            if name == "xtask" {
                continue;
            }
            let mut deps = Vec::new();
            let mut in_deps = false;
            for line in text.lines() {
                let line = line.trim();
                if line.starts_with('[') {
                    in_deps = line == "[dependencies]";
                    continue;
                }
                if in_deps && line.starts_with("cuzk-") {
                    let dep: String = line
                        .chars()
                        .take_while(|c| c.is_ascii_alphanumeric() || *c == '-' || *c == '_')
                        .collect();
                    deps.push(dep);
                }
            }
            deps.sort();
            graph.insert(name, deps);
        }
        graph
    }

    /// The strings of `key = [ "…", … ]` (the first such array).
    fn array_after(text: &str, key: &str) -> Vec<String> {
        let start = text
            .find(&format!("{key} = ["))
            .unwrap_or_else(|| panic!("no `{key} = [`"));
        let end = start + text[start..].find(']').expect("the array closes");
        text[start..end]
            .split('"')
            .skip(1)
            .step_by(2)
            .map(str::to_string)
            .collect()
    }

    /// The lines `crate: dep dep …` of the fenced block under
    /// ARCHITECTURE.md's "Crate graph" heading, in order.
    fn architecture_lines(root: &Path) -> Vec<(String, Vec<String>)> {
        let text = std::fs::read_to_string(root.join("ARCHITECTURE.md")).unwrap();
        let section = text
            .split("## Crate graph")
            .nth(1)
            .expect("ARCHITECTURE.md has a `## Crate graph` section");
        let block = section
            .split("```")
            .nth(1)
            .expect("the section has a fenced block");
        block
            .lines()
            .skip(1) // the fence's info string
            .filter(|l| !l.trim().is_empty())
            .map(|l| {
                let (name, deps) = l
                    .split_once(':')
                    .unwrap_or_else(|| panic!("`{l}`: expected `crate: deps`"));
                let deps: Vec<String> = deps.split_whitespace().map(str::to_string).collect();
                (name.trim().to_string(), deps)
            })
            .collect()
    }

    #[test]
    fn the_crate_graph_lists_every_crate_after_its_dependencies() {
        let lines = architecture_lines(&crate::workspace_root());
        for (i, (name, deps)) in lines.iter().enumerate() {
            for dep in deps {
                assert!(
                    lines[..i].iter().any(|(n, _)| n == dep),
                    "ARCHITECTURE.md's crate graph lists {name} before its dependency {dep}"
                );
            }
        }
    }

    /// Every `.rs` file under `dir`, recursively.
    fn rust_files(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for e in entries.flatten() {
            let path = e.path();
            if path.is_dir() {
                rust_files(&path, out);
            } else if path.extension().is_some_and(|x| x == "rs") {
                out.push(path);
            }
        }
    }

    /// The library sources: `src/` of every crate under crates/ but the
    /// binary (`crates/cuzk`) and the dev-only test kit, without the
    /// crates' own `bin/` targets.
    fn library_sources(root: &Path) -> Vec<std::path::PathBuf> {
        let mut files = Vec::new();
        for e in std::fs::read_dir(root.join("crates")).unwrap().flatten() {
            let name = e.file_name().to_string_lossy().to_string();
            if name == "cuzk" || name == "cuzk-testkit" {
                continue;
            }
            rust_files(&e.path().join("src"), &mut files);
        }
        files.retain(|f| !f.components().any(|c| c.as_os_str() == "bin"));
        files.sort();
        files
    }

    #[test]
    fn no_library_reads_or_sets_the_environment() {
        let root = crate::workspace_root();
        let mut offenders = Vec::new();
        for f in library_sources(&root) {
            let rel = f.strip_prefix(&root).unwrap().to_string_lossy().to_string();
            let text = std::fs::read_to_string(&f).unwrap();
            for (i, line) in text.lines().enumerate() {
                let code = line.split("//").next().unwrap_or("");
                if ["env::var", "env::set_var", "env::remove_var", "var_os("]
                    .iter()
                    .any(|p| code.contains(p))
                {
                    offenders.push(format!("{rel}:{}: {}", i + 1, line.trim()));
                }
            }
        }
        assert!(
            offenders.is_empty(),
            "library code reads or sets the environment (pass the setting in as \
             configuration; a binary may read it and say so in --help):\n{}",
            offenders.join("\n")
        );
    }

    /// Dated narration: a session number, or a claim fenced by a date.
    fn narrates(line: &str) -> bool {
        let lower = line.to_lowercase();
        let session = lower.match_indices("session").any(|(i, _)| {
            lower[i + "session".len()..]
                .trim_start()
                .starts_with(|c: char| c.is_ascii_digit())
        });
        let until = ["until 20", "till 20", "before 20", "as of 20"]
            .iter()
            .any(|p| lower.contains(p));
        session || until
    }

    #[test]
    fn sources_and_top_level_docs_narrate_no_history() {
        let root = crate::workspace_root();
        let mut files = Vec::new();
        rust_files(&root.join("crates"), &mut files);
        rust_files(&root.join("xtask/src"), &mut files);
        rust_files(&root.join("benches/src"), &mut files);
        for doc in ["README.md", "ARCHITECTURE.md", "BENCHMARKS.md"] {
            files.push(root.join(doc));
        }
        let mut offenders = Vec::new();
        for f in &files {
            // This file names the patterns it looks for.
            if f.ends_with("xtask/src/tidy.rs") {
                continue;
            }
            let text = std::fs::read_to_string(f).unwrap();
            for (i, line) in text.lines().enumerate() {
                if narrates(line) {
                    let rel = f.strip_prefix(&root).unwrap().display();
                    offenders.push(format!("{rel}:{}: {}", i + 1, line.trim()));
                }
            }
        }
        assert!(
            offenders.is_empty(),
            "history in source or top-level docs (it belongs in docs/lab-notes/):\n{}",
            offenders.join("\n")
        );
        assert!(narrates("measured in session 16"));
        assert!(narrates("the two workers took turns until 2026-12-04"));
        assert!(!narrates("a session's device time"));
    }

    #[test]
    fn long_source_files_have_a_reason_in_architecture_md() {
        let root = crate::workspace_root();
        let architecture = std::fs::read_to_string(root.join("ARCHITECTURE.md")).unwrap();
        let mut files = Vec::new();
        rust_files(&root.join("crates"), &mut files);
        let mut offenders = Vec::new();
        for f in files {
            let rel = f.strip_prefix(&root).unwrap().to_string_lossy().to_string();
            let lines = std::fs::read_to_string(&f).unwrap().lines().count();
            if lines > 650 && !architecture.contains(&format!("`{rel}`")) {
                offenders.push(format!("{rel}: {lines} lines"));
            }
        }
        assert!(
            offenders.is_empty(),
            "source files over 650 lines that ARCHITECTURE.md does not name (with a reason) \
             as `path`:\n{}",
            offenders.join("\n")
        );
    }

    #[test]
    fn the_crate_graph_in_architecture_md_is_the_manifests() {
        let root = crate::workspace_root();
        let stated: BTreeMap<String, Vec<String>> = architecture_lines(&root)
            .into_iter()
            .map(|(name, mut deps)| {
                deps.sort();
                (name, deps)
            })
            .collect();
        let actual = graph_from_manifests(&root);
        let show = |g: &BTreeMap<String, Vec<String>>| {
            g.iter()
                .map(|(k, v)| format!("{k}: {}", v.join(" ")))
                .collect::<Vec<_>>()
                .join("\n")
        };
        assert_eq!(
            show(&stated),
            show(&actual),
            "ARCHITECTURE.md's crate graph (left) differs from the Cargo.tomls (right); \
             update the `## Crate graph` block"
        );
    }

    /// The targets of a markdown text's inline links (`[text](target)`) and
    /// reference definitions (`[label]: target`), outside fenced code blocks.
    fn link_targets(text: &str) -> Vec<(usize, String)> {
        let mut out = Vec::new();
        let mut fenced = false;
        for (i, line) in text.lines().enumerate() {
            if line.trim_start().starts_with("```") {
                fenced = !fenced;
                continue;
            }
            if fenced {
                continue;
            }
            let mut rest = line;
            while let Some(at) = rest.find("](") {
                let after = &rest[at + 2..];
                let Some(end) = after.find(')') else { break };
                out.push((i + 1, after[..end].to_string()));
                rest = &after[end..];
            }
            let trimmed = line.trim_start();
            if trimmed.starts_with('[') {
                if let Some(at) = trimmed.find("]: ") {
                    out.push((i + 1, trimmed[at + 3..].to_string()));
                }
            }
        }
        out
    }

    /// The path a link target names, relative to its document, or None for
    /// a URL or an anchor in the same document.
    fn relative_path(target: &str) -> Option<&str> {
        let target = target.trim().trim_start_matches('<');
        let target = target.split_whitespace().next()?.trim_end_matches('>');
        if target.is_empty() || target.starts_with('#') || target.contains("://") {
            return None;
        }
        if target.starts_with("mailto:") {
            return None;
        }
        let path = target.split('#').next().unwrap();
        (!path.is_empty()).then_some(path)
    }

    #[test]
    fn relative_links_in_the_top_level_docs_resolve() {
        let root = crate::workspace_root();
        let mut docs: Vec<std::path::PathBuf> = ["README.md", "ARCHITECTURE.md", "BENCHMARKS.md"]
            .iter()
            .map(|d| root.join(d))
            .collect();
        for entry in std::fs::read_dir(root.join("docs")).unwrap() {
            let path = entry.unwrap().path();
            if path.extension().is_some_and(|e| e == "md") {
                docs.push(path);
            }
        }
        let mut broken = Vec::new();
        for doc in &docs {
            let text = std::fs::read_to_string(doc).unwrap();
            let dir = doc.parent().unwrap();
            for (line, target) in link_targets(&text) {
                let Some(path) = relative_path(&target) else {
                    continue;
                };
                if !dir.join(path).exists() {
                    let rel = doc.strip_prefix(&root).unwrap().display();
                    broken.push(format!("{rel}:{line}: {target}"));
                }
            }
        }
        assert!(
            broken.is_empty(),
            "links to paths that do not exist:\n{}",
            broken.join("\n")
        );
        let sample = "see [a](docs/a.md#x), [b](https://x.org/y) and [c](#here)\n[d]: ../e/\n";
        let targets: Vec<_> = link_targets(sample)
            .into_iter()
            .filter_map(|(_, t)| relative_path(&t).map(str::to_string))
            .collect();
        assert_eq!(targets, ["docs/a.md", "../e/"]);
    }

    /// `-s<digits>` at the end of a name: a session number.
    fn has_session_suffix(name: &str) -> bool {
        match name.rsplit_once("-s") {
            Some((_, digits)) => !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()),
            None => false,
        }
    }

    #[test]
    fn result_folders_are_named_by_what_they_measure() {
        let root = crate::workspace_root();
        let mut offenders = Vec::new();
        for entry in std::fs::read_dir(root.join("benches/results")).unwrap() {
            let entry = entry.unwrap();
            let name = entry.file_name().to_string_lossy().to_string();
            if entry.path().is_dir() && has_session_suffix(&name) {
                offenders.push(name);
            }
        }
        assert!(
            offenders.is_empty(),
            "benches/results/ folders named by session; name them by machine, date and \
             what they measure:\n{}",
            offenders.join("\n")
        );
        assert!(has_session_suffix("h200-2026-12-02-s10"));
        assert!(!has_session_suffix("h200-2026-12-05-small-card-budgets"));
        assert!(!has_session_suffix("h200-2026-12-04-msm-shifted-bases"));
    }
}
