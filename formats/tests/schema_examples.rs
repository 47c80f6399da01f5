//! Every example in `schema/*.md` parses, and writes back byte for byte:
//! the specs and the code cannot drift apart.

use std::path::Path;

use sampler_formats::{Report, read_site_table};

/// The ```text blocks of a markdown file.
fn examples(name: &str) -> Vec<String> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../schema")
        .join(name);
    let text = std::fs::read_to_string(&path).unwrap();
    let mut blocks = Vec::new();
    let mut current: Option<String> = None;
    for line in text.lines() {
        match (&mut current, line) {
            (None, "```text") => current = Some(String::new()),
            (Some(block), "```") => {
                blocks.push(std::mem::take(block));
                current = None;
            }
            (Some(block), line) => {
                block.push_str(line);
                block.push('\n');
            }
            (None, _) => {}
        }
    }
    assert!(!blocks.is_empty(), "no example in {}", path.display());
    blocks
}

#[test]
fn site_table_examples_round_trip() {
    for example in examples("site-table.md") {
        let sections = read_site_table(example.as_bytes()).unwrap();
        assert_eq!(sections.len(), 3);
        let mut written = Vec::new();
        for section in &sections {
            section.write_to(&mut written).unwrap();
        }
        assert_eq!(String::from_utf8(written).unwrap(), example);
    }
}

#[test]
fn report_examples_round_trip() {
    for example in examples("report-format.md") {
        let report = Report::read(example.as_bytes()).unwrap();
        assert_eq!(report.subreports.len(), 4);
        let mut written = Vec::new();
        report.write_to(&mut written).unwrap();
        assert_eq!(String::from_utf8(written).unwrap(), example);
    }
}
