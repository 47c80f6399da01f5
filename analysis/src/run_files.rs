//! Offline input: run files written by `sampler-run --save DIR` (a report
//! plus its `outcome` subreport, schema/report-format.md) and the site
//! tables of the binaries or `.sites` files given beside them.

use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};

use sampler_extract::SectionContents;
use sampler_resolve::{SITE_INFO_SECTION, extract_reports};
use sampler_storage::counters::RunSamples;

use crate::collector_db::FailureRule;
use crate::dataset::{Batch, Dataset};

/// Adds the site tables of `path`: an ELF binary, object or archive (its
/// `.debug_site_info` sections) or a site table text file.
pub fn add_site_file(dataset: &mut Dataset, path: &Path) -> anyhow::Result<()> {
    for_each_site_table(path, &mut |text| dataset.add_site_tables(text))
}

/// Calls `add` with the site tables' text of `path` (an ELF binary, object
/// or archive: each `.debug_site_info` section; or a site table text file),
/// naming the file in its errors.
pub fn for_each_site_table(
    path: &Path,
    add: &mut dyn FnMut(&str) -> Result<(), sampler_formats::ReadError>,
) -> anyhow::Result<()> {
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
        return add(&text).map_err(|error| anyhow::anyhow!("{name}: {error}"));
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
                add(&text).map_err(|error| anyhow::anyhow!("{object}: {error}"))
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

/// The section where `sampler-cc -fsampler-rates` records the scale each
/// site was built with (`schema/site-table.md`, "Scales").
pub const SITE_SCALES_SECTION: &str = ".debug_site_scales";

/// The scales the sites of `files` (binaries, objects or archives; site
/// table text files have none) were built with: each `.debug_site_scales`
/// section, 1 for every site of a unit built without rates.
pub fn site_scales(files: &[std::path::PathBuf]) -> anyhow::Result<sampler_formats::SiteScales> {
    let mut scales = sampler_formats::SiteScales::new();
    for path in files {
        let name = path.display();
        let mut head = [0u8; 8];
        let n = std::fs::File::open(path)
            .and_then(|mut file| file.read(&mut head))
            .map_err(|error| anyhow::anyhow!("{name}: {error}"))?;
        let head = &head[..n];
        if !(head.starts_with(b"\x7fELF")
            || head.starts_with(b"!<arch>\n")
            || head.starts_with(b"!<thin>\n"))
        {
            continue;
        }
        sampler_extract::for_each_section(path, SITE_SCALES_SECTION, &mut |object,
                                                                           contents|
         -> anyhow::Result<
            (),
        > {
            match contents {
                Ok(SectionContents::Data(bytes)) => {
                    let text = String::from_utf8(bytes)
                        .map_err(|_| anyhow::anyhow!("{object}: site scales are not UTF-8"))?;
                    scales.add_text(&text.replace('\0', "")).map_err(|error| {
                        anyhow::anyhow!("{object}: {SITE_SCALES_SECTION}: {error}")
                    })
                }
                Ok(SectionContents::Missing | SectionContents::Empty) => Ok(()),
                Err(error) => Err(anyhow::anyhow!("{object}: {error}")),
            }
        })?;
    }
    Ok(scales)
}

/// The `outcome` fields a run needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Outcome {
    exit_status: i64,
    exit_signal: i64,
    /// `sparsity`, when the launcher wrote it.
    sparsity: Option<u32>,
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
        sparsity: text
            .lines()
            .find_map(|line| line.strip_prefix("sparsity\t"))
            .and_then(|value| value.parse::<u32>().ok())
            .filter(|&sparsity| sparsity >= 1),
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

/// Runs read by one thread before the next batch is handed over.
const CHUNK: usize = 512;

/// Adds every run file of `dir` to `dataset`, calling `progress(done, total)`.
///
/// Files are read and parsed on two threads, in chunks, and added in
/// order; the usual shape of a run file (`samples` subreports of counter
/// schemes, then `outcome`) is read by a single pass that skips rows of
/// zeros without parsing them, anything else by the general parser.
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
    if u32::try_from(files.len()).is_err() {
        anyhow::bail!("more than 2^32 runs");
    }
    let n_chunks = files.len().div_ceil(CHUNK);
    let n_workers = std::thread::available_parallelism()
        .map_or(1, usize::from)
        .clamp(1, 4)
        .min(n_chunks.max(1));
    let template = dataset.batch();
    let files = &files;
    std::thread::scope(|scope| -> anyhow::Result<()> {
        let mut results = Vec::new();
        for worker in 0..n_workers {
            let (sender, receiver) = std::sync::mpsc::sync_channel(1);
            results.push(receiver);
            let template = template.empty();
            scope.spawn(move || {
                for chunk in (worker..n_chunks).step_by(n_workers) {
                    let mut batch = template.empty();
                    let start = chunk * CHUNK;
                    let end = (start + CHUNK).min(files.len());
                    let result = (start..end)
                        .try_for_each(|run| read_run(&mut batch, run as u32, &files[run], rule))
                        .map(|()| {
                            batch.group();
                            batch
                        });
                    let failed = result.is_err();
                    if sender.send(result).is_err() || failed {
                        return;
                    }
                }
            });
        }
        for chunk in 0..n_chunks {
            let batch = results[chunk % n_workers]
                .recv()
                .map_err(|_| anyhow::anyhow!("a reading thread stopped"))??;
            dataset.add_batch(batch);
            let done = ((chunk + 1) * CHUNK).min(files.len());
            progress(done as u64, files.len() as u64);
        }
        Ok(())
    })?;
    dataset.finish();
    progress(files.len() as u64, files.len() as u64);
    Ok(())
}

/// Reads run file `file` as run number `run` into `batch`.
fn read_run(batch: &mut Batch, run: u32, file: &Path, rule: &FailureRule) -> anyhow::Result<()> {
    let bytes =
        std::fs::read(file).map_err(|error| anyhow::anyhow!("{}: {error}", file.display()))?;
    read_run_bytes(batch, run, &bytes, file, rule)
}

/// [`read_run`] of the file's bytes.
fn read_run_bytes(
    batch: &mut Batch,
    run: u32,
    bytes: &[u8],
    file: &Path,
    rule: &FailureRule,
) -> anyhow::Result<()> {
    let mark = batch.mark();
    batch.start_run(run, Some(false));
    if let Some(outcome) = fast::read(bytes, batch)
        && let Ok(outcome) = self::outcome(&outcome, file)
    {
        add_tail(batch, bytes, file)?;
        let failed = rule.classify(outcome.exit_status, outcome.exit_signal, None);
        if let (Some(sparsity), Some(_)) = (outcome.sparsity, failed) {
            batch.note_sparsity(sparsity);
        }
        batch.set_outcome(mark, failed);
        return Ok(());
    }
    batch.rollback(mark);
    read_run_generally(batch, run, bytes, file, rule)
}

/// [`read_run`] with the general parser only.
fn read_run_generally(
    batch: &mut Batch,
    run: u32,
    bytes: &[u8],
    file: &Path,
    rule: &FailureRule,
) -> anyhow::Result<()> {
    let mut outcome_text = Vec::new();
    let n = extract_reports(bytes, "outcome", &mut outcome_text)
        .map_err(|error| anyhow::anyhow!("{}: {error}", file.display()))?;
    if n == 0 {
        anyhow::bail!(
            "{}: no `outcome` subreport: not a run file of `sampler-run --save`",
            file.display()
        );
    }
    let outcome = outcome(&String::from_utf8_lossy(&outcome_text), file)?;
    let mut samples_text = Vec::new();
    extract_reports(bytes, sampler_formats::SAMPLES_REPORT_ID, &mut samples_text)
        .map_err(|error| anyhow::anyhow!("{}: {error}", file.display()))?;
    let samples = RunSamples::parse(&samples_text)
        .map_err(|error| anyhow::anyhow!("{}: samples: {error}", file.display()))?;
    let failed = rule.classify(outcome.exit_status, outcome.exit_signal, None);
    if batch.start_run(run, failed) {
        if let Some(sparsity) = outcome.sparsity {
            batch.note_sparsity(sparsity);
        }
        batch.add_samples(&samples);
        add_tail(batch, bytes, file)?;
    }
    Ok(())
}

/// With a tail window, the tail predicates of the run's last trace
/// ([`crate::tail`]) into the current run; a run without a trace has none.
fn add_tail(batch: &mut Batch, bytes: &[u8], file: &Path) -> anyhow::Result<()> {
    let Some(events) = batch.tail() else {
        return Ok(());
    };
    let tail = crate::tail::tail_of_report(bytes, events)
        .map_err(|error| anyhow::anyhow!("{}: trace: {error}", file.display()))?;
    if let Some(tail) = tail {
        batch.add_samples(&tail);
    }
    Ok(())
}

/// The single pass over run files of the usual shape.
mod fast {
    use sampler_formats::{MAX_LINE_BYTES, SampleKind, SchemeName, SectionKey, UnitSignature};
    use sampler_storage::counters::MAX_SITES_PER_SECTION;

    use crate::dataset::Batch;

    /// Adds the counters of `bytes`, a run file, to the current run of
    /// `batch`, and returns its `outcome` subreports' text; `None` when
    /// the file is not of the shape read here (the caller then reads it
    /// with the general parser, which also names any error). Accepted is
    /// only what the general parser reads the same way: subreports with
    /// well-formed ids, each line ending with a newline; `samples`
    /// subreports holding only `<samples>` sections of known counter
    /// schemes, one per unit and scheme, with canonical decimal counters;
    /// other subreports' lines valid UTF-8 and not `<report` tags.
    pub(super) fn read(bytes: &[u8], batch: &mut Batch) -> Option<String> {
        if !bytes.ends_with(b"\n") {
            return None;
        }
        let mut input = Lines { bytes, at: 0 };
        let mut outcome = String::new();
        let mut n_outcomes = 0;
        let mut keys: Vec<SectionKey> = Vec::new();
        while let Some(line) = input.next() {
            let id = line.strip_prefix(b"<report id=\"")?.strip_suffix(b"\">")?;
            if id.is_empty() || id.iter().any(|b| matches!(b, b'"' | b'<' | b'>')) {
                return None;
            }
            if id == sampler_formats::SAMPLES_REPORT_ID.as_bytes() {
                loop {
                    let line = input.next()?;
                    if line == b"</report>" {
                        break;
                    }
                    let key = samples_tag(line)?;
                    let Some(SampleKind::Counters(arity)) = key.scheme.sample_kind() else {
                        return None;
                    };
                    if keys.contains(&key) {
                        return None;
                    }
                    let has_table = batch.counter_section(&key);
                    keys.push(key);
                    let rows = match arity {
                        1 => section::<2>(&mut input, batch, has_table),
                        2 => section::<4>(&mut input, batch, has_table),
                        3 => section::<6>(&mut input, batch, has_table),
                        4 => section::<8>(&mut input, batch, has_table),
                        9 => section::<18>(&mut input, batch, has_table),
                        _ => None,
                    }?;
                    if rows >= MAX_SITES_PER_SECTION {
                        return None;
                    }
                }
            } else {
                std::str::from_utf8(id).ok()?;
                let is_outcome = id == b"outcome";
                loop {
                    let line = input.next()?;
                    if line == b"</report>" {
                        n_outcomes += usize::from(is_outcome);
                        break;
                    }
                    if line.len() > MAX_LINE_BYTES || line.starts_with(b"<report") {
                        return None;
                    }
                    let text = std::str::from_utf8(line).ok()?;
                    if is_outcome {
                        outcome.push_str(text);
                        outcome.push('\n');
                    }
                }
            }
        }
        (n_outcomes > 0).then_some(outcome)
    }

    struct Lines<'a> {
        bytes: &'a [u8],
        at: usize,
    }

    impl<'a> Lines<'a> {
        /// The next line, without its newline (every line has one).
        fn next(&mut self) -> Option<&'a [u8]> {
            let rest = &self.bytes[self.at..];
            let end = rest.iter().position(|&b| b == b'\n')?;
            self.at += end + 1;
            Some(&rest[..end])
        }
    }

    /// `<samples unit="U" scheme="S">`.
    fn samples_tag(line: &[u8]) -> Option<SectionKey> {
        let rest = line.strip_prefix(b"<samples unit=\"")?;
        let (unit, rest) = rest.split_at_checked(32)?;
        let scheme = rest.strip_prefix(b"\" scheme=\"")?.strip_suffix(b"\">")?;
        let unit: UnitSignature = std::str::from_utf8(unit).ok()?.parse().ok()?;
        let scheme: SchemeName = std::str::from_utf8(scheme).ok()?.parse().ok()?;
        Some(SectionKey::new(unit, scheme))
    }

    /// Reads a section's rows of `L / 2` counters up to `</samples>`,
    /// adding the non-zero ones (when `has_table`); the number of rows.
    fn section<const L: usize>(
        input: &mut Lines<'_>,
        batch: &mut Batch,
        has_table: bool,
    ) -> Option<usize> {
        let mut zero = [b'\t'; L];
        for slot in 0..L / 2 {
            zero[2 * slot] = b'0';
        }
        zero[L - 1] = b'\n';
        let mut row = 0usize;
        loop {
            // Rows of zeros, the most common by far, are compared whole.
            while input.bytes.len() - input.at >= L && input.bytes[input.at..input.at + L] == zero {
                input.at += L;
                row += 1;
            }
            let line = input.next()?;
            if line == b"</samples>" {
                return Some(row);
            }
            let mask = counters(line, L / 2)?;
            if mask != 0 && has_table {
                batch.row_mask(u32::try_from(row).ok()?, mask);
            }
            row += 1;
        }
    }

    /// The mask of the non-zero counters of a row of `arity` canonical
    /// decimal counters (each below 2^64).
    fn counters(line: &[u8], arity: usize) -> Option<u16> {
        let mut mask = 0u16;
        let mut n = 0;
        for field in line.split(|&b| b == b'\t') {
            if n == arity
                || field.is_empty()
                || field.len() > 20
                || (field.len() > 1 && field[0] == b'0')
                || !field.iter().all(u8::is_ascii_digit)
            {
                return None;
            }
            if field.len() == 20 {
                std::str::from_utf8(field).ok()?.parse::<u64>().ok()?;
            }
            if field != b"0" {
                mask |= 1 << n;
            }
            n += 1;
        }
        (n == arity).then_some(mask)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const U1: &str = "0123456789abcdef0123456789abcdef";
    const U2: &str = "fedcba9876543210fedcba9876543210";

    fn dataset() -> Dataset {
        let mut dataset = Dataset::new();
        dataset
            .add_site_tables(&format!(
                "<sites unit=\"{U1}\" scheme=\"branches\">\n/a.c\t1\tf\t0\tx\n/a.c\t2\tf\t1\ty\n/a.c\t3\tf\t2\tz\n</sites>\n\
                 <sites unit=\"{U1}\" scheme=\"returns\">\n/a.c\t4\tf\t3\tg\n/a.c\t5\tf\t4\th\n</sites>\n\
                 <sites unit=\"{U2}\" scheme=\"branches\">\n/a.c\t1\tf\t0\tx\n/b.c\t9\tm\t0\tw\n</sites>\n"
            ))
            .unwrap();
        dataset
    }

    const OUTCOME: &str =
        "<report id=\"outcome\">\nreport-id\tx\nexit-status\t0\nexit-signal\t11\n</report>\n";

    /// Every file read both ways: the same error or the same dataset.
    #[test]
    fn the_single_pass_reads_as_the_general_parser() {
        let samples = |body: &str| format!("<report id=\"samples\">\n{body}</report>\n");
        let b1 =
            |rows: &str| format!("<samples unit=\"{U1}\" scheme=\"branches\">\n{rows}</samples>\n");
        let r1 =
            |rows: &str| format!("<samples unit=\"{U1}\" scheme=\"returns\">\n{rows}</samples>\n");
        let b2 =
            |rows: &str| format!("<samples unit=\"{U2}\" scheme=\"branches\">\n{rows}</samples>\n");
        let unknown =
            format!("<samples unit=\"{U2}\" scheme=\"function-entries\">\n0\n3\n</samples>\n");
        let files = [
            samples(&(b1("0\t0\n2\t0\n0\t7\n") + &r1("0\t0\t0\n0\t1\t0\n") + &b2("1\t1\n0\t0\n")))
                + OUTCOME,
            samples(&b1("0\t0\n0\t0\n0\t0\n"))
                + &samples(&r1("1\t0\t0\n0\t0\t0\n"))
                + "<report id=\"other\">\nanything <x>\n</report>\n"
                + OUTCOME,
            samples(&unknown) + OUTCOME,
            samples("") + OUTCOME + OUTCOME,
            // Read by the general parser only, or refused by both.
            samples(&(b1("0\t0\n2\t0\n0\t7\n") + &b1("1\t0\n0\t0\n0\t1\n"))) + OUTCOME,
            samples(&b1("0\t0\n02\t0\n0\t7\n")) + OUTCOME,
            samples(&b1("0\t0\n18446744073709551616\t0\n0\t7\n")) + OUTCOME,
            samples(&b1("0\t0\n18446744073709551615\t0\n0\t7\n")) + OUTCOME,
            samples(&b1("0\t0\n0\t0\t0\n0\t7\n")) + OUTCOME,
            samples(&b1("0\t0\r\n0\t0\n0\t7\n")) + OUTCOME,
            samples(&b1("0\t0\n0\t0\n")) + OUTCOME.trim_end(),
            samples(&format!(
                "<timestamps unit=\"{U1}\" scheme=\"branches\" when=\"first\">\n1\n0\n</timestamps>\n"
            )) + OUTCOME,
            samples(&b1("0\t1\n")),
            samples(&b1("0\t1\n")) + "<report id=\"outcome\">\nexit-status\t0\n</report>\n",
            samples(&b1("0\t1\n")) + "<report id=\"outcome\">\n<report id=\"x\">\n</report>\n",
            format!("{}{OUTCOME}", b1("0\t1\n")),
            samples(&(b1("0\t1\n") + "\n")) + OUTCOME,
            "<report id=\"\">\n</report>\n".to_owned() + OUTCOME,
            samples(&b1("0\t1\n")).replace("</report>\n", "") + OUTCOME,
        ];
        let rule = FailureRule::default();
        for (index, file) in files.iter().enumerate() {
            let read = |general: bool| {
                let mut dataset = dataset();
                let mut batch = dataset.batch();
                let path = Path::new("x.report");
                let result = if general {
                    read_run_generally(&mut batch, 3, file.as_bytes(), path, &rule)
                } else {
                    read_run_bytes(&mut batch, 3, file.as_bytes(), path, &rule)
                };
                dataset.add_batch(batch);
                dataset.finish();
                (
                    result.map_err(|error| error.to_string()),
                    dataset.observations,
                    dataset.runs,
                    dataset.failing,
                    dataset.unresolved_sections,
                )
            };
            let general = read(true);
            assert_eq!(read(false), general, "file {index}");
            if index < 4 {
                assert!(general.0.is_ok(), "file {index}: {:?}", general.0);
                let taken = fast::read(file.as_bytes(), &mut dataset().batch());
                assert!(taken.is_some(), "file {index}: not read in a single pass");
            }
        }
    }

    /// `--last 2`: the predicates of each run's last two observations (of
    /// every thread, by sequence number) from its last trace.
    #[test]
    fn tail_predicates_come_from_the_last_observations_of_the_last_trace() {
        let mut dataset = Dataset::with_tail(2);
        dataset
            .add_site_tables(&format!(
                "<sites unit=\"{U1}\" scheme=\"branches\">\n/a.c\t1\tf\t0\tx\n/a.c\t2\tf\t1\ty\n</sites>\n"
            ))
            .unwrap();
        let trace = |threads: &str| {
            format!(
                "<report id=\"trace\">\nversion\t1\nclock\tTSC\t1000\ntable\t0\t{U1}\tbranches\n{threads}</report>\n"
            )
        };
        let samples = format!(
            "<report id=\"samples\">\n<samples unit=\"{U1}\" scheme=\"branches\">\n3\t1\n1\t1\n</samples>\n</report>\n"
        );
        let outcome = |signal: u32| {
            format!(
                "<report id=\"outcome\">\nreport-id\tx\nexit-status\t0\nexit-signal\t{signal}\n</report>\n"
            )
        };
        // Run 0 crashes: its last two events are (x true, seq 7) in
        // thread 9 and (y false, seq 8) in thread 8; an interim trace
        // before is ignored. Run 1 exits: its last two are y true, x false.
        let runs = [
            samples.clone()
                + &trace("thread\t9\tcrashing\t1\t0\t0\n0\t1\t0\t0\t0\n")
                + &trace(
                    "thread\t9\tcrashing\t2\t1\t0\n0\t0\t0\t0\t0\n0\t0\t1\t6\t5\nthread\t8\tlive\t2\t2\t0\n0\t1\t1\t0\t0\n0\t1\t0\t6\t3\n",
                )
                + &outcome(11),
            samples.clone()
                + &trace(
                    "thread\t4\texiting\t3\t0\t0\n0\t0\t1\t0\t0\n0\t1\t1\t1\t1\n0\t0\t0\t2\t1\n",
                )
                + &outcome(0),
        ];
        let mut batch = dataset.batch();
        let rule = FailureRule::default();
        for (run, text) in runs.iter().enumerate() {
            read_run_bytes(
                &mut batch,
                run as u32,
                text.as_bytes(),
                Path::new("x"),
                &rule,
            )
            .unwrap();
        }
        dataset.add_batch(batch);
        dataset.finish();
        let held = |wanted: &str| -> (Vec<u32>, Vec<u32>) {
            let index = (0..dataset.predicates.len())
                .find(|&i| dataset.predicates[i].text(&dataset.sites) == wanted)
                .unwrap_or_else(|| panic!("no predicate {wanted}"));
            let observations = &dataset.observations[index];
            (
                observations.observed.iter().collect(),
                observations.held.iter().collect(),
            )
        };
        assert_eq!(held("x in the last 2 events"), (vec![0, 1], vec![0]));
        assert_eq!(held("!(x) in the last 2 events"), (vec![0, 1], vec![1]));
        assert_eq!(held("y in the last 2 events"), (vec![0, 1], vec![1]));
        assert_eq!(held("!(y) in the last 2 events"), (vec![0, 1], vec![0]));
        // The ordinary predicates are untouched.
        assert_eq!(held("x"), (vec![0, 1], vec![0, 1]));
    }

    /// Each predicate's observation rate: its site's scale at the runs'
    /// most common sparsity.
    #[test]
    fn observation_rates_come_from_scales_and_the_typical_sparsity() {
        let mut dataset = dataset();
        assert_eq!(dataset.observation_rate(0), None);
        let mut scales = sampler_formats::SiteScales::new();
        scales
            .add_text(&format!(
                "<scales unit=\"{U1}\" scheme=\"branches\">\n0\n11\n1\n</scales>\n"
            ))
            .unwrap();
        dataset.record_scales(&scales);
        dataset.note_sparsity(100, 3);
        dataset.note_sparsity(1000, 1);
        assert_eq!(dataset.typical_sparsity(), Some(100));
        let rate = |file: &str, line: u32, scheme: &str| {
            let site = dataset
                .sites
                .iter()
                .position(|s| s.file == file && s.line == line && s.scheme == scheme)
                .unwrap();
            dataset.observation_rate(site).unwrap()
        };
        // y at scale 11, z at 1; the returns table and the other unit have
        // no scales: 1.
        assert_eq!(rate("/a.c", 2, "branches"), 0.10466174574128356);
        assert_eq!(rate("/a.c", 3, "branches"), 0.01);
        assert_eq!(rate("/a.c", 4, "returns"), 0.01);
        assert_eq!(rate("/b.c", 9, "branches"), 0.01);
    }
}
