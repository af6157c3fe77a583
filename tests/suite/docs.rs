//! The docs against their sources: the README stays short, every local
//! link resolves, and the generated tables that need no benchmark (the
//! sample tables and the key table) equal what generates them.

use crate::common::root;
use std::path::{Path, PathBuf};

fn docs() -> Vec<PathBuf> {
    let mut v = vec![
        root().join("README.md"),
        root().join("python/README.md"),
        root().join("probe/README.md"),
    ];
    for e in std::fs::read_dir(root().join("docs")).unwrap() {
        let p = e.unwrap().path();
        if p.extension().is_some_and(|x| x == "md") {
            v.push(p);
        }
    }
    v
}

/// The body of the table block `name` in `text` (between its markers).
fn block<'a>(text: &'a str, name: &str) -> Option<&'a str> {
    let start = text.find(&format!("<!-- table: {name} "))?;
    let body = &text[start..];
    let body = &body[body.find("-->")? + 4..];
    Some(&body[..body.find("<!-- /table -->")?])
}

/// The first markdown table of a file (what `scripts/tables.py` takes).
fn first_table(text: &str) -> String {
    let lines: Vec<&str> = text
        .lines()
        .skip_while(|l| !l.starts_with('|'))
        .take_while(|l| l.starts_with('|'))
        .collect();
    lines.join("\n") + "\n"
}

#[test]
fn the_readme_is_short_and_leads_with_the_walkthrough() {
    let readme = std::fs::read_to_string(root().join("README.md")).unwrap();
    let n = readme.lines().count();
    assert!(n <= 200, "README.md has {n} lines (at most 200)");
    assert!(readme.contains("<!-- walkthrough -->"));
    assert!(
        readme.find("Five-minute triage") < readme.find("## Test it"),
        "the walkthrough comes before the tests"
    );
}

#[test]
fn every_local_link_in_the_docs_resolves() {
    let mut broken = Vec::new();
    for doc in docs() {
        let text = std::fs::read_to_string(&doc).unwrap();
        let dir = doc.parent().unwrap_or(Path::new("."));
        for part in text.split("](").skip(1) {
            let Some(target) = part.split(')').next() else {
                continue;
            };
            let target = target.split('#').next().unwrap_or("");
            if target.is_empty() || target.contains(':') || target.contains(' ') {
                continue;
            }
            if !dir.join(target).exists() {
                broken.push(format!("{}: {target}", doc.display()));
            }
        }
    }
    assert!(broken.is_empty(), "broken links:\n{}", broken.join("\n"));
}

#[test]
fn the_generated_tables_equal_their_sources() {
    let explorer = std::fs::read_to_string(root().join("docs/explorer.md")).unwrap();
    assert_eq!(
        block(&explorer, "keys").expect("docs/explorer.md has the key table"),
        spillscope_explorer::keys::markdown_table(),
        "docs/explorer.md's key table is stale: python3 scripts/tables.py keys"
    );
    let results = std::fs::read_to_string(root().join("docs/results.md")).unwrap();
    for (name, sample) in [("seed", "seed-resnet50-b3"), ("edge", "edge-resnet50-b3")] {
        let md =
            std::fs::read_to_string(root().join(format!("sample-traces/{sample}.md"))).unwrap();
        assert_eq!(
            block(&results, name).unwrap_or_else(|| panic!("docs/results.md lacks {name}")),
            first_table(&md),
            "docs/results.md's {name} table is stale: python3 scripts/tables.py {name}"
        );
    }
    // Every table block names a generator scripts/tables.py has.
    let script = std::fs::read_to_string(root().join("scripts/tables.py")).unwrap();
    for doc in docs() {
        let text = std::fs::read_to_string(&doc).unwrap();
        for part in text.split("<!-- table: ").skip(1) {
            let name = part.split_whitespace().next().unwrap();
            assert!(
                script.contains(&format!("\"{name}\": (")),
                "{}: no generator for table {name}",
                doc.display()
            );
        }
    }
}
