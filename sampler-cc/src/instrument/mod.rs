//! Finds the sites of each scheme in the model of a unit and writes the
//! instrumented `.i` by inserting text at byte offsets of gcc's own `.i`.
//!
//! Every insertion is on one line, so gcc's line counting after each marker,
//! hence its diagnostics and debug information, stay those of the user's
//! files. The counters, the unit's descriptor for the runtime and the site
//! tables go in a prelude after the first line (gcc names the unit after its
//! first marker), under a system-header marker so they raise no warnings.

mod accesses;
mod assignments;
mod counted;
mod outline;
mod regions;
mod warm;
mod weighty;

pub use regions::RegionStats;

use std::collections::{HashMap, HashSet};
use std::fmt::Write as _;
use std::path::Path;

use md5::{Digest, Md5};
use sampler_formats::{Rates, Scheme, SectionKey, UnitSignature};

use crate::frontend::{Function, NodeId, NodeKind, Unit, Variable};
use crate::options::{Options, TlsModel};
use crate::preprocessed::{LineMap, site_text};

/// How a sampled site of scale 1 starts: the per-site countdown check on
/// the global countdown (regions rewrite it to their local one).
const SAMPLED_CHECK: &str = "(__builtin_expect(--cbi_countdown < 0, 0) && cbi_sample() ? ";

/// How a sampled site of scale s ≥ 2 (`-fsampler-rates`) starts: the
/// check decrements the countdown by s, `SCALED_CHECK_OPEN s
/// SCALED_CHECK_CLOSE`.
const SCALED_CHECK_OPEN: &str = "(__builtin_expect((cbi_countdown -= ";
const SCALED_CHECK_CLOSE: &str = ") < 0, 0) && cbi_sample() ? ";

/// How a site of scale 0 (rate 1) starts: counted on every execution,
/// without a check.
const ALWAYS: &str = "(1 ? ";

/// The start of a sampled site's code at `scale` on the global countdown.
fn sampled_check(scale: u32) -> String {
    match scale {
        0 => ALWAYS.to_owned(),
        1 => SAMPLED_CHECK.to_owned(),
        s => format!("{SCALED_CHECK_OPEN}{s}{SCALED_CHECK_CLOSE}"),
    }
}

/// `text` with each check on the global countdown ([`sampled_check`] of
/// scale 1 or more) replaced by `with(scale)`; scale-0 sites, which have
/// no check, are left as they are.
fn rewrite_checks(text: &str, with: &dyn Fn(u32) -> String) -> String {
    if !text.contains(SAMPLED_CHECK) && !text.contains(SCALED_CHECK_OPEN) {
        return text.to_owned();
    }
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    loop {
        let plain = rest.find(SAMPLED_CHECK);
        let scaled = rest.find(SCALED_CHECK_OPEN).and_then(|at| {
            let digits = &rest[at + SCALED_CHECK_OPEN.len()..];
            let n = digits.bytes().take_while(u8::is_ascii_digit).count();
            let scale = digits[..n].parse::<u32>().ok()?;
            digits[n..].starts_with(SCALED_CHECK_CLOSE).then_some((
                at,
                SCALED_CHECK_OPEN.len() + n + SCALED_CHECK_CLOSE.len(),
                scale,
            ))
        });
        let found = match (plain, scaled) {
            (Some(p), Some(sc)) if sc.0 < p => Some(sc),
            (Some(p), _) => Some((p, SAMPLED_CHECK.len(), 1)),
            (None, sc) => sc,
        };
        let Some((at, len, scale)) = found else {
            out.push_str(rest);
            return out;
        };
        out.push_str(&rest[..at]);
        out.push_str(&with(scale));
        rest = &rest[at + len..];
    }
}

/// Callees whose "result" is not a value worth observing.
const UNOBSERVED_CALLEE_PREFIXES: [&str; 3] = ["__builtin_", "__atomic_", "__sync_"];

/// The result of instrumenting one unit.
#[derive(Debug)]
pub struct Instrumented {
    pub text: Vec<u8>,
    /// Sites per scheme, in the order of the unit's tables.
    pub site_counts: Vec<(Scheme, usize)>,
    /// Functions left alone because the front end reported errors in them.
    pub functions_with_errors: Vec<String>,
    /// The first of those errors, as `file:line: message`.
    pub first_error: Option<String>,
    /// What the sampling transform cloned.
    pub regions: RegionStats,
    /// With `-fsampler-rates`, each scheme's sites' scales as built, in
    /// the order of the unit's tables.
    pub scales: Option<Vec<(Scheme, Vec<u32>)>>,
}

/// One line of a site table, before formatting.
#[derive(Debug)]
struct Site {
    file: String,
    line: u32,
    function: String,
    statement: u32,
    /// The scheme's own fields.
    fields: Vec<String>,
    /// `bounds`: the kind of value (`CBI_BOUNDS_SIGNED`, ...).
    bounds_kind: u8,
}

/// Text to insert around `start..end` (a wrap), at `start` (a point), or
/// in place of `start..end` (a replacement, of an operator token).
#[derive(Debug, Clone)]
struct Insertion {
    start: usize,
    end: usize,
    /// Between wraps of the same extent, the lower rank goes outside.
    rank: u8,
    open: String,
    close: String,
    replace: bool,
    /// Runs at the function's entry, before any region.
    prologue: bool,
}

impl Insertion {
    fn wrap(start: usize, end: usize, rank: u8, open: String, close: String) -> Insertion {
        Insertion {
            start,
            end,
            rank,
            open,
            close,
            replace: false,
            prologue: false,
        }
    }

    fn point(at: usize, text: String) -> Insertion {
        Insertion::wrap(at, at, 0, text, String::new())
    }

    /// Whether the insertion begins or ends at an edge of `start..end`
    /// (a `__func__` that a copy renames: the two would meet at one
    /// offset).
    fn meets(&self, (start, end): (usize, usize)) -> bool {
        self.start == start || self.end == end || self.start == end || self.end == start
    }
}

/// What the schemes of one function found.
#[derive(Default)]
struct Found {
    sites: Vec<(Scheme, Site)>,
    insertions: Vec<Insertion>,
    /// Where each site's events happen, for the fast copies of regions;
    /// sites observed at the entry have none.
    marks: Vec<regions::Mark>,
}

impl Found {
    /// Records that `count` sites, the last found, observe an event each
    /// time expression `node` is evaluated.
    fn mark(&mut self, node: NodeId, count: usize, lvalue: bool) {
        self.mark_checks(node, count, count, lvalue);
    }

    /// [`Self::mark`] for sites whose code takes `checks` sampling
    /// decisions, fewer than its sites where some are observed together.
    fn mark_checks(&mut self, node: NodeId, count: usize, checks: usize, lvalue: bool) {
        if count > 0 {
            self.marks.push(regions::Mark {
                node,
                count: count as u32,
                checks: checks as u32,
                lvalue,
                first_site: self.sites.len() - count,
                scale: 1,
            });
        }
    }
}

struct Context<'a> {
    text: &'a [u8],
    map: LineMap,
    options: &'a Options,
    cwd: &'a Path,
    /// `__cbi_<signature>`: prefix of the unit's symbols.
    prefix: String,
    /// `scalar-pairs`' constants, ascending: 0, and with
    /// `-fcompare-constants` every integer literal of the instrumented
    /// functions.
    constants: Vec<i128>,
    /// Variables the user's code reads (see [`accesses::user_reads`]).
    user_reads: HashSet<usize>,
    /// The unit's globals by key.
    globals: HashMap<usize, &'a Variable>,
    /// The globals `scalar-pairs` may compare with, in declaration order:
    /// user-written (not from system headers, not reserved names), not
    /// `volatile`, and defined here with external linkage or read by the
    /// user (see [`assignments::is_candidate_global`]).
    candidate_globals: Vec<&'a Variable>,
    /// `-fsampler-rates`: the scale of each site the file lists for this
    /// unit (others have scale 1).
    scales: HashMap<(Scheme, usize), u32>,
    /// The group helpers (`pairsN_s`, `pairsN_u`) the unit's code calls,
    /// the only ones the prelude defines (the unused ones were 1.2% of
    /// bc's text).
    pair_groups: std::cell::RefCell<std::collections::BTreeSet<(usize, &'static str)>>,
}

/// Instruments `text`. Runs on a thread with a deep stack: the data-flow
/// analysis recurses on the statement tree. An error means the file
/// cannot be instrumented at all.
pub fn instrument(
    text: &[u8],
    unit: &Unit,
    options: &Options,
    rates: Option<&Rates>,
    cwd: &Path,
) -> Result<Instrumented, String> {
    std::thread::scope(|scope| {
        std::thread::Builder::new()
            .name("instrument".into())
            .stack_size(256 << 20)
            .spawn_scoped(scope, || instrument_here(text, unit, options, rates, cwd))
            .map_err(|err| format!("cannot start the instrumenter's thread: {err}"))?
            .join()
            .map_err(|_| "internal error: the instrumenter panicked".to_owned())
    })
}

fn instrument_here(
    text: &[u8],
    unit: &Unit,
    options: &Options,
    rates: Option<&Rates>,
    cwd: &Path,
) -> Instrumented {
    let signature: String = Md5::digest(text)
        .iter()
        .map(|byte| format!("{byte:02x}"))
        .collect();
    let schemes = options.active_schemes();
    let mut scales = HashMap::new();
    if let (Some(rates), Ok(unit_signature)) = (rates, signature.parse::<UnitSignature>()) {
        for &scheme in &schemes {
            let key = SectionKey::new(unit_signature, scheme);
            for line in rates.section(&key) {
                scales.insert((scheme, line.site as usize), line.scale);
            }
        }
    }
    let map = LineMap::new(text);
    let user_reads = accesses::user_reads(unit);
    let candidate_globals = unit
        .globals
        .iter()
        .filter(|v| {
            assignments::is_candidate_global(v, &user_reads)
                && map.presumed(v.key).is_some_and(|p| !p.system)
        })
        .collect();
    let mut context = Context {
        text,
        map,
        options,
        cwd,
        prefix: format!("__cbi_{signature}"),
        constants: vec![0],
        user_reads,
        globals: unit.globals.iter().map(|v| (v.key, v)).collect(),
        candidate_globals,
        scales,
        pair_groups: Default::default(),
    };
    let mut tables: Vec<(Scheme, Vec<Site>)> = schemes.iter().map(|&s| (s, Vec::new())).collect();
    let mut insertions = Vec::new();
    let mut functions_with_errors = Vec::new();
    let mut first_error = None;

    let mut instrumented_functions = Vec::new();
    for function in &unit.functions {
        let error = unit
            .errors
            .iter()
            .find(|(at, _)| (function.start..function.end).contains(at));
        // Judged at the body: the return type may come from a system
        // header's macro (`bool`), which gcc marks as system text.
        let body_start = function.node(function.body).start;
        let system = context.map.presumed(body_start).is_none_or(|p| p.system);
        if system || function.gnu_extern_inline || function.no_instrument {
            continue;
        }
        if let Some((at, message)) = error {
            functions_with_errors.push(function.name.clone());
            first_error.get_or_insert_with(|| match context.map.presumed(*at) {
                Some(p) => format!("{}:{}: {message}", p.file, p.line),
                None => message.clone(),
            });
            continue;
        }
        instrumented_functions.push(function);
    }
    if options.compare_constants && schemes.contains(&Scheme::ScalarPairs) {
        context.constants = assignments::unit_constants(&instrumented_functions);
    }
    let mut found_per_function = Vec::with_capacity(instrumented_functions.len());
    for function in instrumented_functions {
        let numbers = function.statement_numbers();
        let mut found = Found::default();
        for (scheme, sites) in &tables {
            let first_id = sites.len();
            match scheme {
                Scheme::Branches => context.branches(function, &numbers, first_id, &mut found),
                Scheme::Returns => context.returns(function, &numbers, first_id, &mut found),
                Scheme::FunctionEntries => context.function_entry(function, first_id, &mut found),
                Scheme::GObjectUnref => {
                    context.g_object_unrefs(function, &numbers, first_id, &mut found);
                }
                Scheme::Atoms => context.atoms(function, &numbers, first_id, &mut found),
                _ => {}
            }
        }
        let ids = |scheme| {
            tables
                .iter()
                .find(|(s, _)| *s == scheme)
                .map(|(_, sites)| sites.len())
        };
        context.assignments(
            function,
            &numbers,
            assignments::FirstIds {
                scalar_pairs: ids(Scheme::ScalarPairs),
                bounds: ids(Scheme::Bounds),
                float_kinds: ids(Scheme::FloatKinds),
            },
            &mut found,
        );
        let mut ids = Vec::with_capacity(found.sites.len());
        for (scheme, site) in std::mem::take(&mut found.sites) {
            if let Some((_, sites)) = tables.iter_mut().find(|(s, _)| *s == scheme) {
                ids.push((scheme, sites.len()));
                sites.push(site);
            }
        }
        // A mark's scale is the smallest of its sites'.
        for mark in &mut found.marks {
            mark.scale = ids[mark.first_site..mark.first_site + mark.count as usize]
                .iter()
                .map(|&(scheme, id)| context.scale(scheme, id))
                .min()
                .unwrap_or(1);
        }
        found_per_function.push((function, found, ids));
    }
    // The scale each site is built with: its own, or its region's.
    let mut built_scales = context.scales.clone();

    // The sampling transform: fast and slow copies of regions, which need
    // to know which calls may run sites.
    let mut regions = RegionStats::default();
    // Regions are numbered across the unit; `-fsample-warm-loops` keeps a
    // counter of executions per region number.
    let mut next_region = 0;
    // One event per warm call has scale 1: rates keep per-region sampling.
    let warm_functions = options.sample
        && options.clone_regions
        && options.sample_regions
        && options.sample_warm_functions
        && rates.is_none();
    if options.sample && options.clone_regions {
        let with_sites: HashSet<&str> = found_per_function
            .iter()
            .filter(|(_, found, _)| !found.marks.is_empty() || !found.insertions.is_empty())
            .map(|(function, _, _)| function.name.as_str())
            .collect();
        let weighty = weighty::Weighty::new(unit, &with_sites);
        let is_weighty = |call: &crate::frontend::Call| weighty.is_weighty(call);
        let warm_counters = format!("{}_warm", context.prefix);
        for (function, found, ids) in &mut found_per_function {
            let mut in_regions = Vec::new();
            regions::clone_regions(
                function,
                text,
                &context.map,
                &found.marks,
                &is_weighty,
                regions::Forms {
                    per_region: options.sample_regions,
                    whole_loops: options.sample_whole_loops,
                    warm_loops: options.sample_warm_loops,
                    warm_functions,
                    split_loops: options.sample_regions && options.sample_split_loops,
                    counted_loops: options.sample_counted_loops,
                    counted_plain_loops: options.sample_counted_plain_loops,
                    unrolled_loops: options.sample_unrolled_loops,
                    across_calls: options.sample_across_calls,
                    nested_loops: options.sample_nested_loops,
                    nested_runs: options.sample_nested_runs,
                    outlined_functions: options.sample_regions && options.sample_outlined_functions,
                },
                &mut found.insertions,
                &mut next_region,
                &mut regions,
                &mut in_regions,
                &warm_counters,
            );
            for (mark, scale) in in_regions {
                let mark = &found.marks[mark];
                for &(scheme, id) in &ids[mark.first_site..mark.first_site + mark.count as usize] {
                    built_scales.insert((scheme, id), scale);
                }
            }
        }
    }
    let warm_slots = if regions.warm_loops + regions.warm_functions > 0 {
        next_region
    } else {
        0
    };
    for (_, found, _) in found_per_function {
        insertions.extend(found.insertions);
    }
    let scales = rates.map(|_| {
        tables
            .iter()
            .map(|(scheme, sites)| {
                let scales = (0..sites.len())
                    .map(|id| built_scales.get(&(*scheme, id)).copied().unwrap_or(1))
                    .collect();
                (*scheme, scales)
            })
            .collect::<Vec<_>>()
    });

    let prelude = context.prelude(
        &signature,
        &tables,
        scales.as_deref(),
        warm_slots,
        warm_functions,
    );
    let prelude_at = context.map.after_first_line(text.len());
    let mut output = Vec::with_capacity(text.len() + prelude.len() + insertions.len() * 160);
    output.extend_from_slice(&text[..prelude_at]);
    output.extend_from_slice(prelude.as_bytes());
    let columns = Columns {
        map: &context.map,
        text,
        system: None,
    };
    apply_insertions(
        &mut output,
        text,
        prelude_at,
        text.len(),
        insertions,
        Some(&columns),
    );
    Instrumented {
        text: output,
        site_counts: tables
            .iter()
            .map(|(scheme, sites)| (*scheme, sites.len()))
            .collect(),
        functions_with_errors,
        first_error,
        regions,
        scales,
    }
}

/// Copies `text[from..to]` into `output` with the insertions placed: at
/// one offset closes come first (innermost first), then points, then opens
/// (outermost first).
/// Puts the user's text after an insertion back at its own line and
/// column: a newline, a line marker for its line, and the line's text
/// before it blanked (each byte a space, tabs kept), so that gcc's
/// diagnostics on the user's code point where the user wrote it (gcc
/// counts a line's bytes, or its display columns with tabs to the next
/// multiple of 8: both are kept, except after a multi-byte character,
/// whose display width is not its byte count).
pub(super) struct Columns<'a> {
    pub(super) map: &'a LineMap,
    pub(super) text: &'a [u8],
    /// `Some(flag)`: the text's system-header flag forced (a region's
    /// fast copy); `None`: its own.
    pub(super) system: Option<bool>,
}

impl Columns<'_> {
    /// The text that puts `offset` back at its line and column.
    fn restore(&self, offset: usize) -> Option<String> {
        let presumed = self.map.presumed(offset)?;
        let marker = self
            .map
            .marker_for(offset, self.system.unwrap_or(presumed.system))?;
        Some(format!(
            "\n{marker}{}",
            padding(self.text, self.map, offset)
        ))
    }
}

/// Blanks as wide as the text before `offset` on its line (tabs kept),
/// so that text placed after a line marker stands at `offset`'s column.
fn padding(text: &[u8], map: &LineMap, offset: usize) -> String {
    text[map.line_start(offset)..offset]
        .iter()
        .map(|&b| if b == b'\t' { '\t' } else { ' ' })
        .collect()
}

/// `text[start..end]` with `insertions`, after a line marker that puts it
/// at its own line and column, as system-header text or the user's.
fn emit(
    out: &mut String,
    text: &[u8],
    map: &LineMap,
    start: usize,
    end: usize,
    system: bool,
    insertions: Vec<Insertion>,
) -> Result<(), &'static str> {
    out.push('\n');
    out.push_str(&map.marker_for(start, system).ok_or("no line marker")?);
    out.push_str(&padding(text, map, start));
    let mut rendered = Vec::with_capacity(end - start + insertions.len() * 24);
    let columns = Columns {
        map,
        text,
        system: Some(system),
    };
    apply_insertions(&mut rendered, text, start, end, insertions, Some(&columns));
    out.push_str(&String::from_utf8_lossy(&rendered));
    Ok(())
}

fn apply_insertions(
    output: &mut Vec<u8>,
    text: &[u8],
    from: usize,
    to: usize,
    insertions: Vec<Insertion>,
    columns: Option<&Columns<'_>>,
) {
    // (offset, class, -other end, rank, text, bytes replaced)
    let mut events: Vec<(usize, u8, i64, i64, String, usize)> =
        Vec::with_capacity(insertions.len() * 2);
    for insertion in insertions {
        if insertion.replace {
            let length = insertion.end - insertion.start;
            events.push((insertion.start, 1, 0, 0, insertion.open, length));
            continue;
        }
        if insertion.start == insertion.end {
            events.push((insertion.start, 1, 0, 0, insertion.open, 0));
            continue;
        }
        let (start, end, rank) = (
            insertion.start as i64,
            insertion.end as i64,
            i64::from(insertion.rank),
        );
        events.push((insertion.start, 2, -end, rank, insertion.open, 0));
        events.push((insertion.end, 0, -start, -rank, insertion.close, 0));
    }
    events.sort_by_key(|a| (a.0, a.1, a.2, a.3));
    let mut copied = from;
    let mut events = events.into_iter().peekable();
    // Whether a snippet since the last restore had lines of its own.
    let mut multiline = false;
    while let Some((offset, _, _, _, snippet, replaced)) = events.next() {
        let offset = offset.max(from).max(copied).min(to);
        output.extend_from_slice(&text[copied..offset]);
        output.extend_from_slice(snippet.as_bytes());
        multiline |= snippet.contains('\n');
        copied = (offset + replaced).min(to);
        // After the last snippet at this place, if the user's text goes on
        // on this line (or on the next, after a snippet of several lines).
        let last_here = events
            .peek()
            .is_none_or(|next| next.0.max(from).min(to) > offset);
        if let Some(columns) = columns
            && last_here
            && !snippet.is_empty()
            && copied < to
            && (text[copied] != b'\n' || multiline)
            && let Some(restore) = columns.restore(copied)
        {
            output.extend_from_slice(restore.as_bytes());
            multiline = false;
        }
    }
    output.extend_from_slice(&text[copied..to]);
}

impl Context<'_> {
    /// The site's common fields at `offset`, if the filters keep it.
    fn site(
        &self,
        function: &Function,
        offset: usize,
        statement: u32,
        fields: Vec<String>,
    ) -> Option<Site> {
        let presumed = self.map.presumed(offset)?;
        let absolute = if Path::new(presumed.file).is_absolute() || presumed.file.starts_with('<') {
            presumed.file.to_owned()
        } else {
            self.cwd.join(presumed.file).to_string_lossy().into_owned()
        };
        if !self
            .options
            .includes(&function.name, &[presumed.file, &absolute], presumed.line)
        {
            return None;
        }
        let file = if self.options.relative_paths {
            presumed.file.to_owned()
        } else {
            absolute
        };
        Some(Site {
            file: clean_field(&file),
            line: presumed.line,
            function: function.name.clone(),
            statement,
            fields: fields.iter().map(|field| clean_field(field)).collect(),
            bounds_kind: 0,
        })
    }

    /// A `void` expression that runs `action` (a `void` expression) when
    /// an event of site `id` of `scheme` is observed: sampled through the
    /// runtime's countdown unless `-fno-sample`, and followed by the
    /// site's timestamps if asked for.
    fn observe(&self, scheme: Scheme, id: usize, action: &str) -> String {
        self.observe_sites(scheme, id..id + 1, action)
    }

    /// [`Self::observe`] for sites `ids` of `scheme` observed together, as
    /// one event (an assignment's `scalar-pairs` candidates): one check at
    /// the first site's scale, which the caller has made sure is every
    /// site's, then each site's timestamps.
    fn observe_sites(&self, scheme: Scheme, ids: std::ops::Range<usize>, action: &str) -> String {
        let (first, last) = (self.options.timestamp_first, self.options.timestamp_last);
        let mut action = action.to_owned();
        if first || last {
            for id in ids.clone() {
                let table = |wanted: bool, when: &str| {
                    if wanted {
                        format!("&{}_{}_{when}[{id}]", self.prefix, symbol(scheme))
                    } else {
                        "0".to_owned()
                    }
                };
                action = format!(
                    "({action}, {}_stamp({}, {}))",
                    self.prefix,
                    table(first, "first"),
                    table(last, "last")
                );
            }
        }
        if self.options.sample {
            format!(
                "{}{action} : (void)0)",
                sampled_check(self.scale(scheme, ids.start))
            )
        } else {
            action
        }
    }

    /// The scale site `id` of `scheme` asks for: the rates file's, else 1.
    /// `bounds` sites keep 1: their values are not counts.
    fn scale(&self, scheme: Scheme, id: usize) -> u32 {
        if scheme == Scheme::Bounds {
            return 1;
        }
        self.scales.get(&(scheme, id)).copied().unwrap_or(1)
    }

    /// Adds one to counter `selector` of site `id`: atomically where the
    /// counter may be shared (sampled, once the process has a second
    /// thread; or `-fthreads`).
    /// Sampled, the increment is the prelude's `count` helper, which also
    /// hands the observation to the flight recorder (`SAMPLER_TRACE`): it
    /// runs only for sampled events, so the call costs nothing on the
    /// fast path, and `-fno-sample` builds, which count every event, never
    /// trace.
    fn increment(&self, scheme: Scheme, id: usize, selector: &str) -> String {
        let table = format!("{}_{}", self.prefix, symbol(scheme));
        if self.options.sample {
            return format!(
                "{}_count(&{table}[{id}][(unsigned int)({selector})])",
                self.prefix
            );
        }
        let counter = format!("{table}[{id}][{selector}]");
        if self.options.threads {
            format!("(void)__atomic_fetch_add(&{counter}, 1ULL, 0)")
        } else {
            format!("(void){counter}++")
        }
    }

    /// A `void` expression handing a sampled observation of site `id` to
    /// the flight recorder, for schemes that do not count through the
    /// `count` helper (bounds): the row's first value names its site.
    fn trace(&self, scheme: Scheme, id: usize) -> String {
        format!(
            "__cbi_trace_observe_value(&{}_{}[{id}][0])",
            self.prefix,
            symbol(scheme)
        )
    }

    /// Code counting one event of site `id` of `scheme` in counter
    /// `selector`, as a `void` expression.
    fn count_expression(&self, scheme: Scheme, id: usize, selector: &str) -> String {
        self.observe(scheme, id, &self.increment(scheme, id, selector))
    }

    /// [`Self::count_expression`] as a statement.
    fn count(&self, scheme: Scheme, id: usize, selector: &str) -> String {
        format!("{};", self.count_expression(scheme, id, selector))
    }

    fn branches(&self, function: &Function, numbers: &[u32], first_id: usize, found: &mut Found) {
        let mut site_id = first_id;
        for (id, node) in function.nodes.iter().enumerate() {
            if !node.condition || !node.evaluated || node.constant || node.start >= node.end {
                continue;
            }
            if !is_branch_leaf(function, id) {
                continue;
            }
            let statement = numbers[function.enclosing_statement(id)];
            let text = site_text(self.text, node.start, node.end);
            let Some(site) = self.site(function, node.start, statement, vec![text]) else {
                continue;
            };
            let (open, close) = if self.options.sample {
                // One countdown check per evaluation, whatever the outcome.
                let var = format!("__cbi_b{site_id}");
                let count = self.count(Scheme::Branches, site_id, &var);
                (
                    format!("__extension__ ({{ _Bool {var} = ("),
                    format!("); {count} {var}; }})"),
                )
            } else {
                // Counting on each outcome with a constant index lets gcc
                // merge the counted test with the user's own branch (about
                // 10% less compile time than the temporary).
                let count = |outcome| self.count_expression(Scheme::Branches, site_id, outcome);
                (
                    "((".to_owned(),
                    format!(") ? ({}, 1) : ({}, 0))", count("1"), count("0")),
                )
            };
            found.sites.push((Scheme::Branches, site));
            found.mark(id, 1, false);
            found
                .insertions
                .push(Insertion::wrap(node.start, node.end, 0, open, close));
            site_id += 1;
        }
    }

    fn returns(&self, function: &Function, numbers: &[u32], first_id: usize, found: &mut Found) {
        let mut site_id = first_id;
        for (id, node) in function.nodes.iter().enumerate() {
            let NodeKind::Call(call) = &node.kind else {
                continue;
            };
            if !call.discrete_result || !node.evaluated || node.start >= node.end {
                continue;
            }
            if call.direct.as_deref().is_some_and(|name| {
                UNOBSERVED_CALLEE_PREFIXES
                    .iter()
                    .any(|prefix| name.starts_with(prefix))
            }) {
                continue;
            }
            let callee = node.children.first().map(|&c| function.node(c));
            let text = match callee {
                Some(callee) => site_text(self.text, callee.start, callee.end),
                None => site_text(self.text, node.start, node.end),
            };
            let statement = numbers[function.enclosing_statement(id)];
            let Some(site) = self.site(function, node.start, statement, vec![text]) else {
                continue;
            };
            let (result, zero) = (format!("__cbi_r{site_id}"), format!("__cbi_z{site_id}"));
            let open = format!("__extension__ ({{ __auto_type {result} = (");
            // Comparing with a zero of the same type, not a literal 0, keeps
            // -Wtype-limits quiet for unsigned results and works for pointers.
            let selector = format!("({result} > {zero}) + ({result} >= {zero})");
            let close = format!(
                "); __typeof__({result}) {zero} = 0; {} {result}; }})",
                self.count(Scheme::Returns, site_id, &selector)
            );
            found.sites.push((Scheme::Returns, site));
            found.mark(id, 1, false);
            found
                .insertions
                .push(Insertion::wrap(node.start, node.end, 2, open, close));
            site_id += 1;
        }
    }

    fn function_entry(&self, function: &Function, first_id: usize, found: &mut Found) {
        let Some(site) = self.site(function, function.name_offset, 0, Vec::new()) else {
            return;
        };
        let count = self.count(Scheme::FunctionEntries, first_id, "0");
        found.sites.push((Scheme::FunctionEntries, site));
        found
            .insertions
            .push(self.entry_declaration(function, "__cbi_entry", &count));
    }

    /// A declaration at the start of `function`'s body that runs
    /// `statements`: a declaration, so that it may precede the body's own
    /// declarations even under -Wdeclaration-after-statement.
    fn entry_declaration(&self, function: &Function, name: &str, statements: &str) -> Insertion {
        let open = format!(
            "__extension__ __attribute__((__unused__)) _Bool {name} = ({{ {statements} 0; }});"
        );
        Insertion {
            prologue: true,
            ..Insertion::point(function.node(function.body).start + 1, open)
        }
    }

    /// Declarations of the runtime's interface, the unit's counters and
    /// descriptor, its registration, and its site tables.
    fn prelude(
        &self,
        signature: &str,
        tables: &[(Scheme, Vec<Site>)],
        scales: Option<&[(Scheme, Vec<u32>)]>,
        warm_slots: usize,
        warm_functions: bool,
    ) -> String {
        let prefix = &self.prefix;
        let mut out = String::new();
        out.push_str("# 1 \"<sampler-prelude>\" 3\n");
        // `cbi_sample` is not declared cold, though that would make gcc
        // move every sampled execution out of line (bc 4% faster): a
        // region's warnings come from its SLOW copy (FAST is system text),
        // and gcc then lost a -Wmaybe-uninitialized warning of plain gcc's,
        // apparently not warning in blocks it predicts never run
        // (BENCHMARKS.md, "a cold draw").
        // The runtime's thread-locals are initial-exec (runtime/src/tls.c,
        // its TLS segment static): declared so here, code built with -fPIC
        // reads them at a fixed offset from the thread pointer, where the
        // default general-dynamic model calls __tls_get_addr on each access
        // (874 calls in an instrumented libz.so). In files for executables
        // the countdown is local-exec and the unit's own (see there).
        out.push_str(countdown_declaration(
            self.options.tls_model,
            self.options.sample,
        ));
        out.push_str(
            "extern int cbi_sample(void);\n\
             extern void __cbi_register_unit(void *) __asm__(\"cbi_registerUnit\");\n\
             extern void __cbi_unregister_unit(void *) __asm__(\"cbi_unregisterUnit\");\n",
        );
        out.push_str(
            "extern unsigned long long __cbi_next_timestamp(void) __asm__(\"cbi_nextTimestamp\");\n\
             extern int __cbi_atoms_observe(const volatile void *) __asm__(\"cbi_atomsObserve\");\n\
             extern int __cbi_g_object_classify(const void *) \
             __asm__(\"cbi_gObjectUnrefClassify\");\n\
             extern __thread void *cbi_traceRing __attribute__((__tls_model__(\"initial-exec\")));\n\
             extern __thread unsigned long long cbi_sampledEvents \
             __attribute__((__tls_model__(\"initial-exec\")));\n\
             extern void __cbi_trace_observe_value(const void *) __asm__(\"cbi_traceObserveValue\");\n\
             extern void __cbi_trace_record_value(void *, unsigned long long, const void *) \
             __asm__(\"cbi_traceRecordValue\");\n\
             extern char __cbi_single_threaded __asm__(\"__libc_single_threaded\") \
             __attribute__((__weak__));\n\
             extern const char *cbi_plainCounts;\n",
        );
        let hidden = "__attribute__((__visibility__(\"hidden\"), __weak__))";
        if warm_slots > 0 {
            let _ = writeln!(out, "{hidden} unsigned int {prefix}_warm[{warm_slots}];");
        }
        if warm_functions {
            // Outside a warm function's copy its sampled calls run, the
            // flag that forces its regions (regions.rs) is this 0.
            let _ = writeln!(out, "enum {{ {} = 0 }};", regions::FORCED);
        }
        // Not `static`: C99 inline functions may not use static objects,
        // and user code calls these.
        let helper = format!("{hidden} void");
        for (scheme, sites) in tables {
            let arity = values_per_site(*scheme);
            let name = format!("{prefix}_{}", symbol(*scheme));
            if *scheme == Scheme::Bounds {
                // Rows of (min, max, kind) start at (max, min) of the kind,
                // so that a site never observed reads min > max.
                let rows: Vec<String> = sites
                    .iter()
                    .map(|site| match site.bounds_kind {
                        BOUNDS_SIGNED => {
                            format!(
                                "{{0x7fffffffffffffffULL, 0x8000000000000000ULL, {BOUNDS_SIGNED}}}"
                            )
                        }
                        kind => format!("{{0xffffffffffffffffULL, 0, {kind}}}"),
                    })
                    .collect();
                let _ = writeln!(
                    out,
                    "{hidden} unsigned long long {name}[{}][3] = {{{}}};",
                    sites.len(),
                    rows.join(", ")
                );
            } else {
                let _ = writeln!(
                    out,
                    "{hidden} unsigned long long {name}[{}][{arity}];",
                    sites.len()
                );
            }
            for (wanted, when) in [
                (self.options.timestamp_first, "first"),
                (self.options.timestamp_last, "last"),
            ] {
                if wanted {
                    let _ = writeln!(
                        out,
                        "{hidden} unsigned long long {name}_{when}[{}];",
                        sites.len()
                    );
                }
            }
        }
        if self.options.timestamp_first || self.options.timestamp_last {
            // One tick of the process-wide clock per observation; "first"
            // keeps the tick of the first one.
            let _ = writeln!(
                out,
                "{helper} {prefix}_stamp(unsigned long long *first, unsigned long long *last) \
                 {{ unsigned long long now = __cbi_next_timestamp(), never = 0; \
                 if (first) __atomic_compare_exchange_n(first, &never, now, 0, 0, 0); \
                 if (last) __atomic_store_n(last, now, 0); }}"
            );
        }
        if tables.iter().any(|(scheme, _)| *scheme == Scheme::Bounds) {
            // Running minimum and maximum, correct under concurrency.
            for (suffix, ty) in [("signed", "long long"), ("unsigned", "unsigned long long")] {
                let _ = writeln!(
                    out,
                    "{helper} {prefix}_bound_{suffix}(unsigned long long *row, {ty} value) \
                     {{ {ty} *min = ({ty} *)&row[0], *max = ({ty} *)&row[1]; \
                     {ty} seen = __atomic_load_n(min, 0); \
                     while (value < seen && !__atomic_compare_exchange_n(min, &seen, value, 1, 0, 0)) ; \
                     seen = __atomic_load_n(max, 0); \
                     while (value > seen && !__atomic_compare_exchange_n(max, &seen, value, 1, 0, 0)) ; }}"
                );
            }
        }
        let bytes: Vec<String> = (0..16)
            .map(|i| format!("0x{}", &signature[2 * i..2 * i + 2]))
            .collect();
        let _ = writeln!(
            out,
            "{hidden} const unsigned char {prefix}_signature[16] = {{{}}};",
            bytes.join(", ")
        );
        let _ = writeln!(
            out,
            "{hidden} struct {{ const char *scheme; unsigned int kind, arity, n_sites, reserved; \
             void *values; unsigned long long *first, *last; }} {prefix}_schemes[{}] = {{",
            tables.len()
        );
        for (scheme, sites) in tables {
            let name = format!("{prefix}_{}", symbol(*scheme));
            let stamps = |wanted: bool, when: &str| {
                if wanted {
                    format!("{name}_{when}")
                } else {
                    "0".to_owned()
                }
            };
            let _ = writeln!(
                out,
                "  {{ \"{}\", {}, {}, {}, 0, {name}, {}, {} }},",
                scheme.name(),
                if *scheme == Scheme::Bounds {
                    BOUNDS_MIXED
                } else {
                    0
                },
                values_per_site(*scheme),
                sites.len(),
                stamps(self.options.timestamp_first, "first"),
                stamps(self.options.timestamp_last, "last"),
            );
        }
        out.push_str("};\n");
        // The common case of every count helper below: one test, then a
        // plain increment of `counter`.
        let plain = "__builtin_expect(*__atomic_load_n(&cbi_plainCounts, 0) != 0, 1)";
        let count = format!("if ({plain}) ++*counter; else {prefix}_count_slowly(counter);");
        if self.options.sample && tables.iter().any(|(scheme, _)| *scheme != Scheme::Bounds) {
            // Counts one sampled observation of any counting scheme. `count`
            // is the common case, one test: the byte the runtime's
            // `cbi_plainCounts` points at (tls.c) is set while the process
            // has one thread and does not trace, and the increment is then
            // plain. Otherwise `count_slowly` adds atomically once the
            // process has started a thread (glibc's
            // `__libc_single_threaded`, as libstdc++'s reference counts;
            // weak, so always atomic on a libc without it: a locked add
            // costs about 20 cycles, and a sampled region execution
            // observes all its sites), and hands the counter's address to
            // the flight recorder when the thread has a ring; the runtime
            // finds its table, site and slot when it writes the trace. The
            // call passes the counter only: the row, the scheme, the site,
            // the slot and the helper's two tests were most of an
            // observation's instructions at sparsity 100, and passing the
            // address on keeps a traced observation to one call more
            // (BENCHMARKS.md, stops 40 and 41).
            let _ = writeln!(
                out,
                "{helper} {prefix}_count_slowly(unsigned long long *counter) \
                 {{ if (&__cbi_single_threaded != 0 && __cbi_single_threaded) ++*counter; \
                 else __atomic_fetch_add(counter, 1ULL, 0); \
                 void *ring = cbi_traceRing; \
                 if (__builtin_expect(ring != 0, 0)) \
                 __cbi_trace_record_value(ring, cbi_sampledEvents, counter); }}\n\
                 {helper} {prefix}_count(unsigned long long *counter) {{ {count} }}"
            );
        }
        if self.options.sample
            && self.options.pair_helpers
            && tables
                .iter()
                .any(|(scheme, _)| *scheme == Scheme::ScalarPairs)
        {
            // A sampled `scalar-pairs` observation: the site's row, the
            // assigned value and the candidate's, converted to `T`
            // (`assignments::pair_helper`); the comparison and the count
            // are made here, once per unit, where each candidate wrote
            // them in place. gcc compiles an instrumented sqlite3.c 27%
            // faster so (BENCHMARKS.md, stop 41). Counts as `count` does.
            //
            // `pairsN` observes N of an assignment's candidates together,
            // one row each from `row` on (their sites are consecutive):
            // one call and one test of `cbi_plainCounts` for up to
            // PAIRS_PER_CALL candidates, their values in registers, where
            // each was a call of `pair` (`-fsample-regions`; BENCHMARKS.md,
            // stop 42). Its slow path is a function of its own, so that
            // the common case saves no registers.
            for (suffix, ty) in [("s", "long long"), ("u", "unsigned long long")] {
                let _ = writeln!(
                    out,
                    "{helper} {prefix}_pair_{suffix}(unsigned long long *row, {ty} value, {ty} other) \
                     {{ unsigned long long *counter = row + (value > other) + (value >= other); \
                     {count} }}"
                );
                let used: Vec<usize> = self
                    .pair_groups
                    .borrow()
                    .iter()
                    .filter(|(_, used_suffix)| *used_suffix == suffix)
                    .map(|&(n, _)| n)
                    .collect();
                for n in used {
                    let parameters: String = (0..n).map(|i| format!(", {ty} o{i}")).collect();
                    let arguments: String = (0..n).map(|i| format!(", o{i}")).collect();
                    let selector = |i: usize| {
                        format!(
                            "{} + (unsigned long)(value > o{i}) + (unsigned long)(value >= o{i})",
                            3 * i
                        )
                    };
                    let fast: String = (0..n)
                        .map(|i| format!("++row[{}]; ", selector(i)))
                        .collect();
                    let slow: String = (0..n)
                        .map(|i| format!("{prefix}_count_slowly(row + {}); ", selector(i)))
                        .collect();
                    let name = format!("{prefix}_pairs{n}_{suffix}");
                    let _ = writeln!(
                        out,
                        "__attribute__((__noinline__, __cold__)) {helper} {name}_slowly\
                         (unsigned long long *row, {ty} value{parameters}) {{ {slow}}}\n\
                         {helper} {name}(unsigned long long *row, {ty} value{parameters}) \
                         {{ if ({plain}) {{ {fast}}} else {name}_slowly(row, value{arguments}); }}"
                    );
                }
            }
        }
        let _ = writeln!(
            out,
            "{hidden} struct {{ unsigned int abi_version, n_schemes; const unsigned char *signature; \
             void *schemes, *registry_next; }} {prefix}_unit = {{ 2, {}, {prefix}_signature, {prefix}_schemes, 0 }};",
            tables.len()
        );
        // A unit that defines the countdown asks the runtime whether it is
        // the one the runtime refills (countdown_declaration).
        let check = if defines_countdown(self.options.tls_model, self.options.sample) {
            " __cbi_check_countdown(&cbi_countdown);"
        } else {
            ""
        };
        let _ = writeln!(
            out,
            "static void __attribute__((__constructor__, __used__)) {prefix}_register(void) \
             {{ __cbi_register_unit(&{prefix}_unit);{check} }}\n\
             static void __attribute__((__destructor__, __used__)) {prefix}_unregister(void) \
             {{ __cbi_unregister_unit(&{prefix}_unit); }}"
        );
        out.push_str("__asm__(\".pushsection .debug_site_info,\\\"\\\",%progbits\\n\"\n");
        for (scheme, sites) in tables {
            let mut lines = vec![format!(
                "<sites unit=\"{signature}\" scheme=\"{}\">",
                scheme.name()
            )];
            for site in sites {
                let mut line = format!(
                    "{}\t{}\t{}\t{}",
                    site.file, site.line, site.function, site.statement
                );
                for field in &site.fields {
                    line.push('\t');
                    line.push_str(field);
                }
                lines.push(line);
            }
            lines.push("</sites>".into());
            for line in lines {
                let _ = writeln!(
                    out,
                    "\"\\t.ascii \\\"{}\\\\n\\\"\\n\"",
                    asm_string_body(&line)
                );
            }
        }
        out.push_str("\"\\t.popsection\\n\");\n");
        if let Some(scales) = scales {
            // The scale each site was built with (schema/site-table.md):
            // a companion section, so that .debug_site_info keeps the
            // original's grammar.
            out.push_str("__asm__(\".pushsection .debug_site_scales,\\\"\\\",%progbits\\n\"\n");
            for (scheme, scales) in scales {
                let mut lines = vec![format!(
                    "<scales unit=\"{signature}\" scheme=\"{}\">",
                    scheme.name()
                )];
                lines.extend(scales.iter().map(u32::to_string));
                lines.push("</scales>".into());
                for line in lines {
                    let _ = writeln!(
                        out,
                        "\"\\t.ascii \\\"{}\\\\n\\\"\\n\"",
                        asm_string_body(&line)
                    );
                }
            }
            out.push_str("\"\\t.popsection\\n\");\n");
        }
        // Back to where the first line left off.
        if let Some(next) = self
            .map
            .presumed(self.map.after_first_line(self.text.len()))
        {
            let _ = writeln!(
                out,
                "# {} \"{}\"{}",
                next.line,
                next.file.replace('\\', "\\\\").replace('"', "\\\""),
                if next.system { " 3" } else { "" }
            );
        }
        out
    }
}

/// Whether condition node `id` is observed itself: not a `&&`/`||` (whose
/// operands are), and not inside parentheses, `!` or a conversion that is
/// observed instead.
fn is_branch_leaf(function: &Function, id: NodeId) -> bool {
    let stripped = function.node(function.strip_negations(id));
    if matches!(&stripped.kind, NodeKind::Binary(op) if op == "&&" || op == "||") {
        return false;
    }
    match function.node(id).parent.map(|parent| function.node(parent)) {
        Some(parent) if parent.condition => {
            !matches!(&parent.kind, NodeKind::Paren | NodeKind::Implicit)
                && !matches!(&parent.kind, NodeKind::Unary(op) if op == "!")
        }
        _ => true,
    }
}

/// The prelude's declaration of the runtime's countdown for `model`
/// (resolved by the `cc1` stage; `Auto` is read as initial-exec, which is
/// valid everywhere).
///
/// Initial-exec, as the runtime defines it: a load of the offset from the
/// GOT, which gcc keeps in a register for the function's life.
///
/// Local-exec (units of executables, options::TlsModel): the unit also
/// defines the countdown, weakly and with default visibility whatever
/// `-fvisibility` says. The executable then holds a countdown at an offset
/// the linker fixes, and exports it, because the shared runtime defines the
/// same symbol: the runtime's and instrumented shared objects'
/// initial-exec GOT entries bind to it, so that the program keeps one
/// countdown per thread. gcc decrements `%fs:OFFSET` in one instruction
/// and holds no register for it (the sqlite3 shell: 2.6% fewer
/// instructions). Weak, not common: gcc's LTO made a common thread-local
/// the executable's own and left the runtime with its own. Each object
/// keeps its 4 bytes of TLS; the first one linked is the countdown.
fn countdown_declaration(model: TlsModel, sampled: bool) -> &'static str {
    if defines_countdown(model, sampled) {
        "__attribute__((__weak__, __visibility__(\"default\"), __tls_model__(\"local-exec\"))) \
         __thread int cbi_countdown;\n\
         extern void __cbi_check_countdown(const int *) __asm__(\"cbi_checkCountdown\");\n"
    } else {
        "extern __thread int cbi_countdown __attribute__((__tls_model__(\"initial-exec\")));\n"
    }
}

/// Whether a unit compiled with `model` defines the countdown (and checks,
/// from its constructor, that the runtime refills that one: a link that
/// hides the executable's definition leaves the runtime its own).
fn defines_countdown(model: TlsModel, sampled: bool) -> bool {
    sampled && model == TlsModel::LocalExec
}

/// The C symbol suffix of a scheme's counters.
fn symbol(scheme: Scheme) -> String {
    scheme.name().replace('-', "_")
}

/// `enum cbi_values_kind` of `sampler.h`.
const BOUNDS_SIGNED: u8 = 1;
const BOUNDS_UNSIGNED: u8 = 2;
const BOUNDS_POINTER: u8 = 3;
const BOUNDS_MIXED: u8 = 4;

/// Values in a row of a scheme's table: its counters, or for `bounds`
/// (min, max, kind).
fn values_per_site(scheme: Scheme) -> usize {
    match scheme.sample_kind() {
        sampler_formats::SampleKind::Counters(n) => n,
        sampler_formats::SampleKind::Bounds => 3,
    }
}

/// Site-table fields hold no tab or newline.
fn clean_field(text: &str) -> String {
    text.replace(['\t', '\n', '\r'], " ")
}

/// `line` as the body of a gas string inside a C string literal: first
/// escaped for gas (`\\`, `\"`, octal for the rest of the non-printable
/// bytes), then for C.
fn asm_string_body(line: &str) -> String {
    let mut gas = String::with_capacity(line.len() + 8);
    for &byte in line.as_bytes() {
        match byte {
            b'\\' => gas.push_str("\\\\"),
            b'"' => gas.push_str("\\\""),
            b'\t' => gas.push_str("\\t"),
            0x20..=0x7e => gas.push(byte as char),
            _ => {
                let _ = write!(gas, "\\{byte:03o}");
            }
        }
    }
    gas.replace('\\', "\\\\").replace('"', "\\\"")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn asm_strings_are_escaped_twice() {
        assert_eq!(asm_string_body("a\tb"), "a\\\\tb");
        assert_eq!(
            asm_string_body("s == \"x\\\""),
            "s == \\\\\\\"x\\\\\\\\\\\\\\\""
        );
        assert_eq!(asm_string_body("é"), "\\\\303\\\\251");
    }

    #[test]
    fn insertions_nest() {
        let text = b"if (f(x)) y;";
        let mut out = Vec::new();
        let wrap = |start, end, rank, open: &str, close: &str| {
            Insertion::wrap(start, end, rank, open.into(), close.into())
        };
        apply_insertions(
            &mut out,
            text,
            0,
            text.len(),
            vec![
                wrap(4, 8, 1, "R(", ")R"),
                wrap(4, 8, 0, "B(", ")B"),
                wrap(6, 7, 1, "r(", ")r"),
                wrap(11, 11, 0, "P", ""),
            ],
            None,
        );
        assert_eq!(String::from_utf8(out).unwrap(), "if (B(R(f(r(x)r))R)B) yP;");
    }
}
