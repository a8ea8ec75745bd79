//! Checks that keep the repository's documents true to its code, run as
//! tests (`cargo test -p xtask`, so in CI): the crate graph that
//! ARCHITECTURE.md states is the one the `Cargo.toml`s declare.

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
}
