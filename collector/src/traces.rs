//! A run's `trace` subreport (schema/report-format.md: the last sampled
//! events of each thread), checked at upload and resolved against the
//! registered site tables for the read API and the crash pages.

use std::collections::HashMap;

use sampler_formats::{SectionKey, Trace};
use serde::Serialize;
use sqlx::Row;

use crate::store::Store;

/// The subreport's id.
pub const TRACE_REPORT_ID: &str = "trace";

/// Checks an uploaded `trace` part; the error names the line.
pub fn check(text: &[u8]) -> Result<(), String> {
    Trace::read_all(text)
        .map(|_| ())
        .map_err(|error| format!("part `{TRACE_REPORT_ID}`: {error}"))
}

/// One sampled event, resolved.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Event {
    /// The process-wide sequence number.
    pub sequence: u64,
    /// Seconds before the trace's last event (0 for the last).
    pub seconds_before_last: f64,
    /// The site's scheme.
    pub scheme: String,
    /// The site's file, line and function, when its table is registered.
    pub file: Option<String>,
    /// The line.
    pub line: Option<u32>,
    /// The function.
    pub function: Option<String>,
    /// What the observation recorded, as a predicate's text
    /// (`sampler_formats::predicates::slot_text`).
    pub predicate: Option<String>,
    /// The site's index in its table.
    pub site: u32,
    /// The slot bumped.
    pub slot: u16,
}

/// One thread's last events, oldest first.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ThreadEvents {
    /// The kernel's thread id.
    pub thread: u64,
    /// `crashing`, `live` or `exited`.
    pub state: String,
    /// The events.
    pub events: Vec<Event>,
}

/// A resolved trace: the crashing thread first, then by thread id.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ResolvedTrace {
    /// The clock's name.
    pub clock: String,
    /// The threads.
    pub threads: Vec<ThreadEvents>,
}

/// A registered site: file, line, function, fields.
type SiteLine = (String, u32, String, Vec<String>);

async fn table_sites(store: &Store, key: &SectionKey) -> anyhow::Result<Option<Vec<SiteLine>>> {
    let row =
        sqlx::query("SELECT sites FROM site_tables WHERE unit_signature = $1 AND scheme = $2")
            .bind(key.unit.to_string())
            .bind(key.scheme.as_str())
            .fetch_optional(&store.pool)
            .await?;
    let Some(row) = row else {
        return Ok(None);
    };
    let text: String = row.try_get(0)?;
    let sections = sampler_formats::read_site_table(text.as_bytes())
        .map_err(|error| anyhow::anyhow!("the stored site table of {key}: {error}"))?;
    Ok(sections.into_iter().next().map(|section| {
        section
            .sites
            .iter()
            .map(|site| {
                let line = site.to_string();
                (
                    site.file.to_string(),
                    site.line,
                    site.function.to_string(),
                    line.split('\t').skip(4).map(str::to_owned).collect(),
                )
            })
            .collect()
    }))
}

/// Resolves `trace` against the registered site tables.
pub async fn resolve(store: &Store, trace: &Trace) -> anyhow::Result<ResolvedTrace> {
    let mut tables: HashMap<u32, (String, Option<Vec<SiteLine>>)> = HashMap::new();
    for (index, key) in trace.tables.iter().enumerate() {
        tables.insert(
            index as u32,
            (
                key.scheme.as_str().to_owned(),
                table_sites(store, key).await?,
            ),
        );
    }
    let last = trace
        .threads
        .iter()
        .flat_map(|thread| &thread.records)
        .map(|record| record.time)
        .max()
        .unwrap_or(0);
    let frequency = trace.clock.ticks_per_second.max(1) as f64;
    let mut threads: Vec<ThreadEvents> = trace
        .threads
        .iter()
        .map(|thread| {
            let mut records = thread.records.clone();
            records.sort_by_key(|record| record.sequence);
            ThreadEvents {
                thread: thread.thread,
                state: thread.state.as_str().to_owned(),
                events: records
                    .iter()
                    .map(|record| {
                        let (scheme, sites) = &tables[&record.table];
                        let site = sites
                            .as_ref()
                            .and_then(|sites| sites.get(record.site as usize));
                        let fields: Vec<&str> = site
                            .map(|(_, _, _, fields)| fields.iter().map(String::as_str).collect())
                            .unwrap_or_default();
                        Event {
                            sequence: record.sequence,
                            seconds_before_last: (last as f64 - record.time as f64) / frequency,
                            scheme: scheme.clone(),
                            file: site.map(|site| site.0.clone()),
                            line: site.map(|site| site.1),
                            function: site.map(|site| site.2.clone()),
                            predicate: site.map(|site| {
                                sampler_formats::predicates::slot_text(
                                    scheme,
                                    record.slot,
                                    &fields,
                                    &site.2,
                                )
                            }),
                            site: record.site,
                            slot: record.slot,
                        }
                    })
                    .collect(),
            }
        })
        .collect();
    threads.sort_by_key(|thread| {
        (
            thread.state != "crashing" && thread.state != "exiting",
            thread.thread,
        )
    });
    Ok(ResolvedTrace {
        clock: trace.clock.name.clone(),
        threads,
    })
}

/// The resolved trace of the stored run `run` (its row id), if it has one.
pub async fn of_run(store: &Store, run: i64) -> anyhow::Result<Option<ResolvedTrace>> {
    let texts = crate::api::subreport_texts(store, run, &[TRACE_REPORT_ID]).await?;
    let Some(text) = texts.get(TRACE_REPORT_ID) else {
        return Ok(None);
    };
    let traces = Trace::read_all(text.as_bytes())
        .map_err(|error| anyhow::anyhow!("the stored trace of run {run}: {error}"))?;
    match traces.first() {
        Some(trace) => Ok(Some(resolve(store, trace).await?)),
        None => Ok(None),
    }
}
