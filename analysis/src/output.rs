//! A [`Report`] for people (a table for terminals) and for programs (CSV;
//! JSON is the report's serde form). `sampler-analyze` and the demo print
//! with these.

use std::io::Write;

use crate::report::{Predictor, Report};

/// How the table looks.
#[derive(Debug, Clone, Copy)]
pub struct TableStyle {
    /// Columns available (longer rows are cut with `…`).
    pub width: usize,
    /// Rows of the full ranking shown after the elimination list.
    pub top: usize,
}

impl TableStyle {
    /// The terminal's width; rows are not cut when stdout is not a
    /// terminal (a file or a pipe wants them whole).
    pub fn for_stdout(top: usize) -> Self {
        let width = console::Term::stdout()
            .size_checked()
            .map_or(usize::MAX, |(_, columns)| usize::from(columns));
        Self { width, top }
    }
}

fn cut(text: String, width: usize) -> String {
    if text.chars().count() > width {
        text.chars()
            .take(width.saturating_sub(1))
            .collect::<String>()
            + "…"
    } else {
        text
    }
}

fn row(
    out: &mut dyn Write,
    style: TableStyle,
    index: usize,
    predictor: &Predictor,
    extra: &str,
) -> std::io::Result<()> {
    let dim = console::Style::new().dim();
    let location = format!(
        "{}:{}",
        predictor.file.rsplit('/').next().unwrap_or("?"),
        predictor.line
    );
    let line = format!(
        "{:>3} {location:<22} {:<18} {:<32} hl {:.3}  inc {:.3}  lb {:.3}  ctx {:.3}  F {:>5}  S {:>5}{extra}",
        format!("{index}."),
        predictor.function,
        predictor.predicate,
        predictor.harmonic,
        predictor.increase,
        predictor.lower_bound,
        predictor.context,
        predictor.f,
        predictor.s,
    );
    writeln!(out, "{}", cut(line, style.width))?;
    if let Some(source) = &predictor.source {
        let source: String = source
            .trim()
            .chars()
            .take(style.width.saturating_sub(8))
            .collect();
        writeln!(out, "{}", dim.apply_to(format!("      | {source}")))?;
    }
    Ok(())
}

/// Prints the elimination list (each predictor with the failing runs it
/// explains), then the first rows of the full ranking.
pub fn print_table(out: &mut dyn Write, report: &Report, style: TableStyle) -> std::io::Result<()> {
    let bold = console::Style::new().bold();
    let dim = console::Style::new().dim();
    writeln!(
        out,
        "{} failing and {} successful runs; {} predicates.",
        report.runs.failing, report.runs.successful, report.predicates
    )?;
    if report.unresolved_sections > 0 {
        writeln!(
            out,
            "{}",
            dim.apply_to(format!(
                "{} sections of runs had no site table (register their builds with `sampler-collector build add`).",
                report.unresolved_sections
            ))
        )?;
    }
    writeln!(
        out,
        "\n{}",
        bold.apply_to("Predictors after redundancy elimination")
    )?;
    if report.elimination.is_empty() {
        writeln!(
            out,
            "  none: no predicate is retained (lower bound of Increase > 0, true in at least 10 runs)"
        )?;
    }
    for (index, predictor) in report.elimination.iter().enumerate() {
        let extra = format!(
            "  explains {} failing, {} left",
            predictor.explains.unwrap_or(0),
            predictor.failing_left.unwrap_or(0)
        );
        row(out, style, index + 1, predictor, &extra)?;
    }
    if style.top == 0 {
        return Ok(());
    }
    writeln!(
        out,
        "\n{}",
        bold.apply_to(format!(
            "All retained predicates ({}), best first",
            report.ranking.len()
        ))
    )?;
    for (index, predictor) in report.ranking.iter().take(style.top).enumerate() {
        row(out, style, index + 1, predictor, "")?;
    }
    Ok(())
}

/// The full ranking as CSV, each row with its place in the elimination.
pub fn print_csv(out: impl Write, report: &Report) -> csv::Result<()> {
    let mut writer = csv::Writer::from_writer(out);
    writer.write_record([
        "rank",
        "eliminated",
        "file",
        "line",
        "function",
        "scheme",
        "predicate",
        "failure",
        "context",
        "increase",
        "lower_bound",
        "importance",
        "harmonic",
        "ochiai",
        "tarantula",
        "dstar",
        "f",
        "s",
        "f_observed",
        "s_observed",
    ])?;
    for (index, p) in report.ranking.iter().enumerate() {
        let eliminated = p
            .eliminated
            .place()
            .map_or_else(String::new, |place| place.to_string());
        // Floats as serde_json writes them, so that CSV and JSON agree.
        let number = |value: f64| serde_json::Value::from(value).to_string();
        writer.write_record([
            (index + 1).to_string(),
            eliminated,
            p.file.clone(),
            p.line.to_string(),
            p.function.clone(),
            p.scheme.clone(),
            p.predicate.clone(),
            number(p.failure),
            number(p.context),
            number(p.increase),
            number(p.lower_bound),
            number(p.importance),
            number(p.harmonic),
            number(p.ochiai),
            number(p.tarantula),
            number(p.dstar),
            p.f.to_string(),
            p.s.to_string(),
            p.f_observed.to_string(),
            p.s_observed.to_string(),
        ])?;
    }
    writer.flush()?;
    Ok(())
}
