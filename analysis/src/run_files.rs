//! Offline input: run files written by `sampler-run --save DIR` (a report
//! plus its `outcome` subreport, schema/report-format.md) and the site
//! tables of the binaries or `.sites` files given beside them.

use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};

use sampler_extract::SectionContents;
use sampler_resolve::{SITE_INFO_SECTION, extract_reports};
use sampler_storage::counters::RunSamples;

use crate::collector_db::FailureRule;
use crate::dataset::Dataset;

/// Adds the site tables of `path`: an ELF binary, object or archive (its
/// `.debug_site_info` sections) or a site table text file.
pub fn add_site_file(dataset: &mut Dataset, path: &Path) -> anyhow::Result<()> {
    let name = path.display();
    let mut input = BufReader::new(
        std::fs::File::open(path).map_err(|error| anyhow::anyhow!("{name}: {error}"))?,
    );
    let head = input.fill_buf()?;
    let binary = head.starts_with(b"\x7fELF")
        || head.starts_with(b"!<arch>\n")
        || head.starts_with(b"!<thin>\n");
    if !binary {
        let mut text = String::new();
        input
            .read_to_string(&mut text)
            .map_err(|error| anyhow::anyhow!("{name}: {error}"))?;
        return dataset
            .add_site_tables(&text)
            .map_err(|error| anyhow::anyhow!("{name}: {error}"));
    }
    let mut found = 0;
    sampler_extract::for_each_section(path, SITE_INFO_SECTION, &mut |object,
                                                                     contents|
     -> anyhow::Result<()> {
        match contents {
            Ok(SectionContents::Data(bytes)) => {
                found += 1;
                let text = String::from_utf8(bytes)
                    .map_err(|_| anyhow::anyhow!("{object}: site tables are not UTF-8"))?;
                dataset
                    .add_site_tables(&text)
                    .map_err(|error| anyhow::anyhow!("{object}: {error}"))
            }
            Ok(SectionContents::Missing | SectionContents::Empty) => Ok(()),
            Err(error) => Err(anyhow::anyhow!("{object}: {error}")),
        }
    })?;
    if found == 0 {
        anyhow::bail!("{name} has no `{SITE_INFO_SECTION}` section: was it built by sampler-cc?");
    }
    Ok(())
}

/// The `outcome` fields a run needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Outcome {
    exit_status: i64,
    exit_signal: i64,
}

fn outcome(text: &str, file: &Path) -> anyhow::Result<Outcome> {
    let field = |name: &str| -> anyhow::Result<i64> {
        let value = text
            .lines()
            .find_map(|line| {
                line.strip_prefix(name)
                    .and_then(|rest| rest.strip_prefix('\t'))
            })
            .ok_or_else(|| {
                anyhow::anyhow!(
                    "{}: the `outcome` subreport has no `{name}`",
                    file.display()
                )
            })?;
        value.parse().map_err(|_| {
            anyhow::anyhow!(
                "{}: `outcome` field `{name}`: `{value}` is not a number",
                file.display()
            )
        })
    };
    Ok(Outcome {
        exit_status: field("exit-status")?,
        exit_signal: field("exit-signal")?,
    })
}

/// The run files of `dir` (`*.report`), in name order (report ids are
/// UUIDs of version 7, so this is the order they were written in).
pub fn run_files(dir: &Path) -> anyhow::Result<Vec<PathBuf>> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(|error| anyhow::anyhow!("{}: {error}", dir.display()))?
        .filter_map(|entry| entry.ok().map(|entry| entry.path()))
        .filter(|path| {
            path.extension()
                .is_some_and(|extension| extension == "report")
        })
        .collect();
    files.sort();
    Ok(files)
}

/// Adds every run file of `dir` to `dataset`, calling `progress(done, total)`.
pub fn add_runs(
    dataset: &mut Dataset,
    dir: &Path,
    rule: &FailureRule,
    mut progress: impl FnMut(u64, u64),
) -> anyhow::Result<()> {
    if rule.crash_group.is_some() {
        anyhow::bail!("crash groups are the collector's: --crash-group needs --data or --database");
    }
    let files = run_files(dir)?;
    for (run, file) in files.iter().enumerate() {
        let bytes =
            std::fs::read(file).map_err(|error| anyhow::anyhow!("{}: {error}", file.display()))?;
        let mut outcome_text = Vec::new();
        let n = extract_reports(bytes.as_slice(), "outcome", &mut outcome_text)
            .map_err(|error| anyhow::anyhow!("{}: {error}", file.display()))?;
        if n == 0 {
            anyhow::bail!(
                "{}: no `outcome` subreport: not a run file of `sampler-run --save`",
                file.display()
            );
        }
        let outcome = outcome(&String::from_utf8_lossy(&outcome_text), file)?;
        let mut samples_text = Vec::new();
        extract_reports(
            bytes.as_slice(),
            sampler_formats::SAMPLES_REPORT_ID,
            &mut samples_text,
        )
        .map_err(|error| anyhow::anyhow!("{}: {error}", file.display()))?;
        let samples = RunSamples::parse(&samples_text)
            .map_err(|error| anyhow::anyhow!("{}: samples: {error}", file.display()))?;
        let failed = rule.classify(outcome.exit_status, outcome.exit_signal, None);
        let run = u32::try_from(run).map_err(|_| anyhow::anyhow!("more than 2^32 runs"))?;
        dataset.add_run(run, failed, &samples);
        if run % 1024 == 1023 {
            progress(u64::from(run) + 1, files.len() as u64);
        }
    }
    progress(files.len() as u64, files.len() as u64);
    Ok(())
}
