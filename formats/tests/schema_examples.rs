//! Every example in `schema/*.md` parses, and writes back byte for byte:
//! the specs and the code cannot drift apart.

use std::path::Path;

use sampler_formats::{Report, Subreport, TRACE_REPORT_ID, Trace, read_site_table};

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
        if example.starts_with("<scales") {
            // `.debug_site_scales`, the companion section.
            let sections = sampler_formats::read_scales(example.as_bytes()).unwrap();
            assert_eq!(sections.len(), 2);
            let mut written = Vec::new();
            for section in &sections {
                section.write_to(&mut written).unwrap();
            }
            assert_eq!(String::from_utf8(written).unwrap(), example);
            continue;
        }
        let sections = read_site_table(example.as_bytes()).unwrap();
        assert_eq!(sections.len(), 3);
        let mut written = Vec::new();
        for section in &sections {
            section.write_to(&mut written).unwrap();
        }
        assert_eq!(String::from_utf8(written).unwrap(), example);
    }
}

/// The ids of an example's subreports.
fn ids(report: &Report) -> Vec<String> {
    report
        .subreports
        .iter()
        .map(|subreport| match subreport {
            Subreport::Samples(_) => "samples".to_owned(),
            Subreport::Other { id, .. } => id.clone(),
        })
        .collect()
}

#[test]
fn report_examples_round_trip() {
    let examples = examples("report-format.md");
    let mut all_ids = Vec::new();
    for example in &examples {
        let report = Report::read(example.as_bytes()).unwrap();
        all_ids.push(ids(&report));
        let mut written = Vec::new();
        report.write_to(&mut written).unwrap();
        assert_eq!(&String::from_utf8(written).unwrap(), example);
    }
    assert_eq!(
        all_ids,
        [
            vec!["samples", "samples", "main-backtrace", "modules"],
            vec!["trace"]
        ]
    );
}

#[test]
fn trace_example_parses_and_writes_back() {
    let example = examples("report-format.md")
        .into_iter()
        .find(|example| example.starts_with("<report id=\"trace\">"))
        .expect("an example of the trace subreport");
    let traces = Trace::read_all(example.as_bytes()).unwrap();
    assert_eq!(traces.len(), 1);
    let trace = &traces[0];
    assert_eq!(trace.tables.len(), 3);
    assert_eq!(trace.threads.len(), 3);
    let mut sequences: Vec<u64> = trace
        .threads
        .iter()
        .flat_map(|thread| thread.records.iter().map(|record| record.sequence))
        .collect();
    sequences.sort_unstable();
    assert_eq!(sequences, [12, 17, 18, 19, 20, 22]);
    let mut written = Vec::new();
    trace.write_to(&mut written).unwrap();
    assert_eq!(String::from_utf8(written).unwrap(), example);

    // The same trace, read from the subreport's lines as `Report` keeps them.
    let report = Report::read(example.as_bytes()).unwrap();
    let Some(Subreport::Other { id, lines }) = report.subreports.first() else {
        panic!("no trace subreport");
    };
    assert_eq!(id, TRACE_REPORT_ID);
    let from_lines = Trace::from_lines(lines.iter().map(String::as_str), 2).unwrap();
    assert_eq!(&from_lines, trace);
}
