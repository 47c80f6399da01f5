//! The sampling transform's fast and slow paths (cbi-behaviour.md §2.2–2.4),
//! cloned structurally in C as the user wrote it.
//!
//! A *region* is either a run of whole statements of one block, or one
//! iteration of an innermost loop, that holds sites but no weighty call
//! (see [`super::weighty`]) and no loop. A run becomes
//!
//! ```c
//! { int L; L = cbi_countdown;
//!   if (__builtin_expect(L >= W, 1)) { FAST } else { SLOW } cbi_countdown = L; }
//! ```
//!
//! (`L`, as the global countdown, holds the events before the next sample,
//! so that running out is the sign of its decrement: [`load_local`].)
//! W is the most sites on any path through the region, SLOW is the region
//! with its per-site checks on `L` (the global countdown is only touched to
//! draw a sample), and FAST is the region with each site's code replaced
//! by `L -= n` on the same expression. When the countdown exceeds W no
//! site can fire before the region ends, so FAST decrements exactly as
//! SLOW would: sampling stays that of one check per event, hence
//! unbiased. Both copies write `L` back before every jump that leaves the
//! region (`return`, `break`, `continue`, `goto`); inside a `return`, which
//! writes back before its value is computed, sites use the global
//! countdown. A loop keeps `L` across its iterations and checks it at the
//! top of each one:
//!
//! ```c
//! { INIT; { int L; L = cbi_countdown;
//!   for (;;) { if (__builtin_expect(L >= W, 1)) { if (!(COND)) { cbi_countdown = L; break; } BODY STEP }
//!              else { if (!(COND)) { cbi_countdown = L; break; } BODY STEP } } } }
//! ```
//!
//! The conditions and `for` steps of other loops, and the conditions of
//! `if`s whose branches hold weighty calls, are regions of their own, as
//! statement expressions. Declarations a run cannot hold check a local
//! countdown, and their scalar initialisers get both copies, chosen by one
//! test. In a leaf function (no weighty call) one local lives from the
//! entry to every `return`, shared by all its regions and sites: regions
//! then neither load nor store the global countdown. Per region, a
//! function whose sites all lie in one run has one event per call, which
//! its run takes from the global countdown (a decrement in memory costs
//! less than a local's load and store around it).
//!
//! Cloning needs no hoisting: declarations keep their blocks (a run that
//! does not reach the end of its block holds no declaration), labels at
//! the head of a run stay outside it, named labels inside are renamed in
//! FAST (a label a jump from outside reaches keeps its region from being
//! cloned: that jump would enter SLOW unsampled), `case` labels of an outer
//! `switch` and `static` locals keep their statement out of regions (but
//! constants only read, which each copy may define: [`duplicable_static`]),
//! per site so does a backward `goto` (per region it need not: a loop it
//! makes is observed whole or not at all in one execution), and
//! functions with computed `goto`, local labels or `setjmp` are not cloned.
//! Everything else keeps its per-site checks: always correct, only slower.
//!
//! FAST is compiled as system-header text (line markers with flag 3) so
//! gcc's warnings come once, from SLOW, at the user's lines.
//!
//! With `-fsample-regions` (the default; `-fsample-sites` is the form
//! above) each execution of a region (a run, one loop
//! iteration, one evaluation of an expression region, one pass over a
//! declaration run) is one event of the countdown instead of each site:
//! the test is `if (__builtin_expect(--L >= 0, 1) || !DRAW) { FAST } else
//! { SLOW }`, where DRAW asks `cbi_sample()` whether this event is sampled
//! (and draws the next countdown), FAST is the original code without any
//! site code, and SLOW observes every site it reaches, unconditionally
//! (`(1 ? ACTION : (void)0)`). Each site is then observed with
//! probability 1/sparsity on each evaluation, as per site; only the
//! observations of one region execution are decided together. Sites
//! outside regions stay one event each.
//!
//! With `-fsample-split-loops` too (the default), a loop region is
//!
//! ```c
//! { INIT; { for (;;) { while (__builtin_expect(--L >= 0, 1)) { if (!(COND)) goto B; BODY STEP }
//!                      if (__builtin_expect(!DRAW, 0)) { ++L; continue; }
//!                      if (!(COND)) break; BODY' STEP' } B: ; } }
//! ```
//!
//! the same events, decrements and draws, but the FAST iterations form a
//! loop of their own that holds no call, where gcc may keep the user's
//! loads in registers; FAST's `break`s become `goto B`, and a draw that
//! does not sample (a thread's first event) gives back the execution it
//! took before its iteration runs FAST. With `-fsample-counted-loops`
//! too (the default), a loop that counts a local integer towards a fixed
//! bound replaces `while (--L >= 0) { … }` by a FAST loop bounded by that
//! variable alone (counted.rs): the same events.
//!
//! With `-fsample-whole-loops` too, an innermost loop without calls (other
//! than `__builtin_`s) and of at most [`WHOLE_LOOP_NODES`] nodes counts as
//! a plain statement: runs hold it whole (and a loop around it is
//! innermost), so one decision covers the loop's whole execution, whose
//! FAST copy is the plain loop (which gcc may vectorise) and whose SLOW
//! copy observes every iteration. Each site's events keep probability
//! 1/sparsity each, but those of one loop execution are decided together:
//! a loop run once per run with many iterations is observed in fewer runs
//! (in about 1/sparsity of them, all its iterations) than per iteration.
//!
//! With `-fsample-across-calls` too (the default), a run may hold weighty
//! calls: its execution is one event taken before it starts, and the
//! callees' sites are later events of the thread's stream, whichever copy
//! called them, so nothing needs FAST to be exact. Such a run takes its
//! event from the global countdown, which the calls use, and keeps no
//! local: `if (__builtin_expect(--cbi_countdown >= 0, 1) || !cbi_sample())
//! { FAST } else { SLOW }`, with no store at its end, its jumps or its
//! `return`s. The iteration of an innermost loop with weighty calls is a
//! loop region the same way, unsplit and never counted. Expression and
//! declaration regions still exclude weighty calls.
//!
//! With `-fsample-outlined-functions` too (the default), a lone run that
//! is its function's whole body keeps its SLOW copy in a function of its
//! own, `F__cbi_slow`, which `F` calls when its event is sampled
//! (outline.rs, [`Renderer::render_outlined`]).
//!
//! With `-fsample-nested-loops` too (the default), the iteration of a loop
//! with loops inside (in its body) is a loop region
//! the same way (the global countdown, or the function's local in a leaf
//! function; unsplit, never counted). Its inner loops (its *holes*) are
//! planned as if it were not a region, but not nested again; each of its
//! copies holds their regions, rendered once per copy
//! ([`Renderer::nest_copies`]), and their remaining per-site checks. Its
//! SLOW copy observes its own sites only: each inner iteration stays an
//! event of its own.
//!
//! With `-fsample-nested-runs` too (the default), a run of statements may
//! hold loops the same way, as holes, when each of them is innermost and
//! together they are small ([`Planner::joins_run`]), and when the run's
//! own sites would otherwise take two events or more
//! ([`Planner::nesting_saves`]): a function shaped like sqlite3's
//! `vdbeSorterCompareInt` (declarations, an `if` whose branch holds a
//! loop, code after it) takes one event per call for its own sites, plus
//! its loop's.

use std::cell::{Cell, RefCell};
use std::collections::{BTreeMap, HashMap};
use std::fmt::Write as _;

use crate::frontend::{Call, Function, Jump, Label, NodeId, NodeKind, Variable};
use crate::preprocessed::{LineMap, skip_trivia};

use super::counted::CountedLoop;
use super::outline::{Declarators, Outline, SLOW_SUFFIX, outline};
use super::weighty::RETURNS_TWICE;
use super::{Insertion, rewrite_checks};
use crate::options::WARM_EXECUTIONS;

/// The countdown decrement that stands for `count` sites on expression
/// `node` in a fast copy.
#[derive(Debug, Clone, Copy)]
pub(super) struct Mark {
    pub node: NodeId,
    pub count: u32,
    /// The sampling decisions the mark's code takes at each evaluation
    /// outside regions: `count`, or fewer where sites are observed
    /// together (an assignment's `scalar-pairs` candidates). What the
    /// planner weighs: a region pays for its copies by the checks it
    /// saves.
    pub checks: u32,
    /// The expression is an lvalue (atoms' accesses) and must stay one.
    pub lvalue: bool,
    /// The first of the mark's sites, in the order the function's sites
    /// were found.
    pub first_site: usize,
    /// The smallest scale of the mark's sites (`-fsampler-rates`; 1
    /// without rates, 0 for a site counted on every execution).
    pub scale: u32,
}

/// What the transform did to a unit, for `-fsampler-stats`.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct RegionStats {
    /// Runs of statements cloned.
    pub runs: usize,
    /// Runs among `runs` that hold weighty calls (`-fsample-across-calls`).
    pub runs_across_calls: usize,
    /// Loops among `loops` whose iterations hold weighty calls.
    pub loops_across_calls: usize,
    /// Loops whose iterations were cloned.
    pub loops: usize,
    /// Conditions and `for` steps of loops with loops inside, and
    /// conditions of `if`s whose branches are not regions.
    pub expressions: usize,
    /// Runs of declarations whose sites check a local countdown (not
    /// cloned, not counted in `cloned_sites`).
    pub declarations: usize,
    /// Functions without weighty calls, whose sites all check one local
    /// countdown.
    pub leaf_functions: usize,
    /// Loops among `loops` whose FAST loop is bounded by their own
    /// variable (`-fsample-counted-loops`).
    pub counted_loops: usize,
    /// Counted loops whose FAST loop also holds the user's loop, run when
    /// the loop ends within the countdown (`-fsample-counted-plain-loops`).
    pub counted_plain_loops: usize,
    /// Loops among `loops` whose FAST iterations run four to a
    /// decrement (`-fsample-unrolled-loops`).
    pub unrolled_loops: usize,
    /// Loops among `loops` with loops inside, whose regions each copy of
    /// the iteration holds (`-fsample-nested-loops`).
    pub nested_loops: usize,
    /// Loops among `loops` that run whole once warm
    /// (`-fsample-warm-loops`).
    pub warm_loops: usize,
    /// Runs among `runs` with loops inside, whose regions each copy of the
    /// run holds (`-fsample-nested-runs`).
    pub nested_runs: usize,
    /// Functions whose lone run's SLOW copy is a function of its own
    /// (`-fsample-outlined-functions`).
    pub outlined_functions: usize,
    /// Outlined functions whose copy calls `F` again on a declined draw
    /// instead of holding a FAST copy of its own.
    pub reentered_functions: usize,
    /// Sites inside cloned regions.
    pub cloned_sites: usize,
    /// Candidate regions left with per-site checks, by reason.
    pub fell_back: BTreeMap<&'static str, usize>,
    /// Functions that run their plain body once warm
    /// (`-fsample-warm-functions`).
    pub warm_functions: usize,
    /// Functions with sites left without the warm form, by reason.
    pub cold_functions: BTreeMap<&'static str, usize>,
}

impl RegionStats {
    pub fn add(&mut self, other: &RegionStats) {
        self.runs += other.runs;
        self.runs_across_calls += other.runs_across_calls;
        self.loops_across_calls += other.loops_across_calls;
        self.loops += other.loops;
        self.counted_loops += other.counted_loops;
        self.unrolled_loops += other.unrolled_loops;
        self.counted_plain_loops += other.counted_plain_loops;
        self.nested_loops += other.nested_loops;
        self.warm_loops += other.warm_loops;
        self.nested_runs += other.nested_runs;
        self.expressions += other.expressions;
        self.declarations += other.declarations;
        self.leaf_functions += other.leaf_functions;
        self.outlined_functions += other.outlined_functions;
        self.reentered_functions += other.reentered_functions;
        self.cloned_sites += other.cloned_sites;
        for (reason, n) in &other.fell_back {
            *self.fell_back.entry(reason).or_default() += n;
        }
        self.warm_functions += other.warm_functions;
        for (reason, n) in &other.cold_functions {
            *self.cold_functions.entry(reason).or_default() += n;
        }
    }

    fn fall_back(&mut self, reason: &'static str) {
        *self.fell_back.entry(reason).or_default() += 1;
    }

    fn cold_function(&mut self, reason: &'static str) {
        *self.cold_functions.entry(reason).or_default() += 1;
    }
}

#[derive(Debug)]
enum Shape {
    /// Statements of one block; the text starts after the labels of the
    /// first one.
    /// `ends_in_jump`: the last statement is a `break`, `continue`, `goto`
    /// or `return`, so no path reaches the run's end.
    Run {
        ends_in_jump: bool,
    },
    Loop {
        node: NodeId,
    },
    /// A condition or a discarded expression (a `for` step).
    Expression {
        use_: Expression,
    },
    /// Declarations whose sites check a local countdown, not cloned.
    Declarations,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Expression {
    /// Used for its truth value.
    Condition,
    /// Evaluated for its effects only.
    Discarded,
}

#[derive(Debug)]
struct Region {
    shape: Shape,
    start: usize,
    end: usize,
    weight: u32,
    sites: u32,
    /// A run, or a loop's iteration, holding weighty calls
    /// (`-fsample-across-calls`): its test takes its event from the global
    /// countdown, and neither copy keeps a local one, since the calls use
    /// the global one. Such a loop is neither split nor counted (its FAST
    /// iterations would not be free of calls).
    across_calls: bool,
    /// A loop's iteration with loops inside (`-fsample-nested-loops`): the
    /// extents of its inner loops, whose sites are not the region's but
    /// events of their own (their regions, rendered into each copy, or
    /// per-site checks). Such a region takes its event from the global
    /// countdown (the function's local in a leaf function) and keeps no
    /// local of its own: its inner regions load and store theirs.
    holes: Vec<(usize, usize)>,
    /// A run that holds every site of its function (per region): its
    /// event, the function's only one per call, is taken from the global
    /// countdown, as a run across calls takes its own.
    lone: bool,
}

impl Region {
    /// Whether its FAST iterations would hold calls that use the countdown
    /// or inner loops' events: such a loop is neither split, counted nor
    /// unrolled (its FAST loop would not be free of them).
    fn unsplit(&self) -> bool {
        self.across_calls || !self.holes.is_empty()
    }
}

/// Which forms of the transform to use (sampler-cc's `-fsample-*` flags).
#[derive(Debug, Clone, Copy)]
pub(super) struct Forms {
    /// `-fsample-regions`: one event per region execution (else per site).
    pub per_region: bool,
    /// `-fsample-whole-loops` (with `per_region`).
    pub whole_loops: bool,
    /// `-fsample-warm-loops` (with `per_region`).
    pub warm_loops: bool,
    /// `-fsample-warm-functions` (with `per_region`).
    pub warm_functions: bool,
    /// `-fsample-split-loops` (with `per_region`).
    pub split_loops: bool,
    /// `-fsample-counted-loops` (with `split_loops`).
    pub counted_loops: bool,
    /// `-fsample-counted-plain-loops` (with `counted_loops`).
    pub counted_plain_loops: bool,
    /// `-fsample-unrolled-loops` (with `split_loops`).
    pub unrolled_loops: bool,
    /// `-fsample-across-calls` (with `per_region`): runs may hold weighty
    /// calls.
    pub across_calls: bool,
    /// `-fsample-nested-loops` (with `across_calls`): a loop's iteration
    /// may hold loops, whose regions each copy of it holds.
    pub nested_loops: bool,
    /// `-fsample-nested-runs` (with `nested_loops`): a run may hold small
    /// innermost loops, whose regions each copy of it holds.
    pub nested_runs: bool,
    /// `-fsample-outlined-functions` (with `per_region`): a lone run of a
    /// function's whole body keeps its SLOW copy in a function of its own
    /// (outline.rs).
    pub outlined_functions: bool,
}

/// Replaces the regions of `function` in `insertions`: the insertions
/// inside each region are consumed by its two copies, and one replacement
/// takes the region's place. `next_region` numbers the regions of the unit.
/// `in_regions` receives, for each mark whose sites are observed as part
/// of a cloned region's event, its index and the region's scale. With
/// `-fsample-warm-functions`, the function rendered so then takes its warm
/// form (warm.rs), its calls counted in the next slot of `warm_counters`.
#[allow(clippy::too_many_arguments)]
pub(super) fn clone_regions(
    function: &Function,
    text: &[u8],
    map: &LineMap,
    marks: &[Mark],
    is_weighty: &dyn Fn(&Call) -> bool,
    forms: Forms,
    insertions: &mut Vec<Insertion>,
    next_region: &mut usize,
    stats: &mut RegionStats,
    in_regions: &mut Vec<(usize, u32)>,
    warm_counters: &str,
) {
    // Whether the function can take the warm form, as far as its sites
    // tell, before its regions are rendered (for it, when it can).
    let eligible = (forms.per_region && forms.warm_functions)
        .then(|| super::warm::eligible(function, text, map, insertions));
    let may_warm = matches!(eligible, Some(Ok(_)));
    let rendered = clone_function(
        function,
        text,
        map,
        marks,
        is_weighty,
        forms,
        may_warm,
        insertions,
        next_region,
        stats,
        in_regions,
        warm_counters,
    );
    // A lone run already takes one event per call.
    let Some(eligible) = eligible else {
        return;
    };
    if rendered != Some(Rendered::Regions) || insertions.is_empty() {
        return;
    }
    let counter = format!("{warm_counters}[{}]", *next_region);
    let warm = eligible.and_then(|outline| {
        super::warm::warm_function(function, text, map, outline, insertions, &counter)
    });
    match warm {
        Ok(()) => {
            *next_region += 1;
            stats.warm_functions += 1;
        }
        Err(reason) => stats.cold_function(reason),
    }
}

/// How [`clone_function`] rendered a function.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Rendered {
    /// Its regions and sites, each region one event.
    Regions,
    /// One event per call: one lone run, or one site and no region.
    Lone,
}

/// [`clone_regions`] without the warm form: `None` for a function that
/// cannot be cloned (its sites keep their own checks). `may_warm`: the
/// function may take the warm form (warm.rs), for which it is rendered.
#[allow(clippy::too_many_arguments)]
fn clone_function(
    function: &Function,
    text: &[u8],
    map: &LineMap,
    marks: &[Mark],
    is_weighty: &dyn Fn(&Call) -> bool,
    forms: Forms,
    may_warm: bool,
    insertions: &mut Vec<Insertion>,
    next_region: &mut usize,
    stats: &mut RegionStats,
    in_regions: &mut Vec<(usize, u32)>,
    warm_counters: &str,
) -> Option<Rendered> {
    if let Some(reason) = unclonable_function(function, text) {
        if !marks.is_empty() {
            stats.fall_back(reason);
        }
        return None;
    }
    let mut planner = Planner::new(function, text, marks, is_weighty, forms);
    planner.plan_statement(function.body);
    stats.add(&planner.stats);
    // A function whose sites are all in one run takes one event per call:
    // decrementing the global countdown costs less than loading a local
    // and storing it back around it (bc's `bc_free_num`: 3 instructions
    // against 7).
    let body_sites = planner.sum[function.body];
    if let [region] = planner.regions.as_mut_slice()
        && forms.per_region
        && matches!(region.shape, Shape::Run { .. })
        && region.holes.is_empty()
        && region.sites == body_sites
    {
        region.lone = true;
    }
    let lone = planner.regions.first().is_some_and(|r| r.lone);
    // A function that may take the warm form renders the copy its sampled
    // calls run, every region forced (warm.rs); a lone run never does.
    let countdown = Countdown {
        forced: may_warm && !lone,
    };
    let outlined = match planner.regions.first() {
        Some(region) if lone && forms.outlined_functions => {
            outlinable(function, text, map, region, insertions)
        }
        _ => None,
    };
    if let Some(outline) = &outlined {
        // SLOW names its function as `F` does.
        for &(start, end) in &outline.function_names {
            insertions.push(replacement(start, end, format!("\"{}\"", function.name)));
        }
    }
    // A leaf function keeps the countdown in one local from its entry to
    // its returns: no call in it can use the global one.
    let leaf = !lone && !planner.weighty[function.body] && body_sites >= 2;
    let shared = leaf.then(|| {
        *next_region += 1;
        format!("__cbi_L{}", *next_region - 1)
    });
    if planner.regions.is_empty() && shared.is_none() {
        // Its sites keep their own checks: one site is one event per call
        // already.
        let sites: u32 = marks.iter().map(|mark| mark.checks).sum();
        return Some(if sites <= 1 {
            Rendered::Lone
        } else {
            Rendered::Regions
        });
    }
    // A nested loop region's copies hold the regions of its inner loops:
    // sorted by start (outer first), they follow it.
    let mut planned = planner.regions;
    planned.sort_by_key(|r| (r.start, std::cmp::Reverse(r.end)));
    let mut regions: Vec<Region> = Vec::new();
    let mut nested: Vec<Vec<Region>> = Vec::new();
    for region in planned {
        match (regions.last(), nested.last_mut()) {
            (Some(outer), Some(inner)) if !outer.holes.is_empty() && region.start < outer.end => {
                inner.push(region);
            }
            _ => {
                regions.push(region);
                nested.push(Vec::new());
            }
        }
    }
    // Hand each insertion to the region holding it: an inner region, the
    // inner loops of a nested one outside its inner regions, or a region.
    let mut inside: Vec<Vec<Insertion>> = regions.iter().map(|_| Vec::new()).collect();
    let mut in_holes: Vec<Vec<Insertion>> = regions.iter().map(|_| Vec::new()).collect();
    let mut inner_own: Vec<Vec<Vec<Insertion>>> = nested
        .iter()
        .map(|inner| inner.iter().map(|_| Vec::new()).collect())
        .collect();
    let holds = |r: &Region, i: &Insertion| i.end <= r.end && i.start < r.end;
    let mut outside = Vec::with_capacity(insertions.len());
    for insertion in insertions.drain(..) {
        let index = regions.partition_point(|r| r.start <= insertion.start);
        match index.checked_sub(1) {
            Some(i) if !insertion.prologue && holds(&regions[i], &insertion) => {
                let in_hole = regions[i]
                    .holes
                    .iter()
                    .any(|&(s, e)| insertion.start >= s && insertion.end <= e);
                if !in_hole {
                    inside[i].push(insertion);
                    continue;
                }
                let inner = &nested[i];
                let j = inner.partition_point(|r| r.start <= insertion.start);
                match j.checked_sub(1) {
                    Some(j) if holds(&inner[j], &insertion) => inner_own[i][j].push(insertion),
                    _ => in_holes[i].push(insertion),
                }
            }
            _ => outside.push(insertion),
        }
    }
    let returns = return_extents(function);
    let renderer = Renderer {
        function,
        text,
        map,
        marks,
        labels: planner.labels,
        calls: planner.calls,
        size: planner.size,
        named_label: planner.named_label,
        returns: returns.clone(),
        shared: shared.clone(),
        per_region: forms.per_region,
        split_loops: forms.split_loops,
        counted_loops: forms.counted_loops,
        counted_plain_loops: forms.counted_plain_loops,
        unrolled_loops: forms.unrolled_loops,
        warm_counters: (forms.per_region && forms.warm_loops).then_some(warm_counters),
        countdown,
        nest: RefCell::new(None),
        in_fast: Cell::new(None),
    };
    let mut rendered = Vec::with_capacity(regions.len());
    let parts = regions.iter().zip(inside).zip(in_holes);
    for (((region, own), mut holes), (inner, inner_own)) in parts.zip(nested.iter().zip(inner_own))
    {
        // In a leaf function the inner loops' per-site checks use its local.
        if let Some(local) = &shared {
            let localiser = Localiser::new(local, &returns, countdown);
            holes.iter_mut().for_each(|i| localiser.localise(i));
        }
        // Each inner region's scale and counted loop, found once for its
        // two renderings and its tally.
        let plans: Vec<_> = inner
            .iter()
            .map(|inner| {
                let scale = renderer.region_scale(inner);
                (scale, renderer.counted(inner, scale))
            })
            .collect();
        let result = renderer
            .nest_copies(region, inner, &inner_own, &plans, &holes, next_region)
            .and_then(|()| {
                let scale = renderer.region_scale(region);
                let counted = renderer.counted(region, scale);
                let replacement = match &outlined {
                    Some(outline) if scale != 0 => {
                        let (replacement, around) =
                            renderer.render_outlined(region, &own, scale, outline)?;
                        outside.extend(around);
                        stats.outlined_functions += 1;
                        stats.reentered_functions += usize::from(outline.reenters);
                        replacement
                    }
                    _ => renderer.render(region, *next_region, &own, scale, counted.as_ref())?,
                };
                Ok((replacement, scale, counted))
            });
        renderer.nest.replace(None);
        match result {
            Ok((replacement, scale, counted)) => {
                *next_region += 1;
                renderer.tally(region, scale, counted.as_ref(), stats, in_regions);
                // Rendered once per copy of the nested region, tallied once.
                for (inner, (scale, counted)) in inner.iter().zip(&plans) {
                    renderer.tally(inner, *scale, counted.as_ref(), stats, in_regions);
                }
                let nested = usize::from(!region.holes.is_empty());
                match region.shape {
                    Shape::Run { .. } => stats.nested_runs += nested,
                    _ => stats.nested_loops += nested,
                }
                rendered.push((region.start, region.end));
                outside.push(Insertion {
                    start: region.start,
                    end: region.end,
                    rank: 0,
                    open: replacement,
                    close: String::new(),
                    replace: true,
                    prologue: false,
                });
            }
            Err(reason) => {
                stats.fall_back(reason);
                outside.extend(own);
                outside.extend(holes);
                outside.extend(inner_own.into_iter().flatten());
            }
        }
    }
    if let Some(local) = shared {
        use_function_local(function, text, &local, countdown, &rendered, &mut outside);
        stats.leaf_functions += 1;
    }
    *insertions = outside;
    Some(if lone {
        Rendered::Lone
    } else {
        Rendered::Regions
    })
}

/// The outline of `function`'s SLOW copy (outline.rs) when `region`, its
/// lone run, is its whole body and no site's code begins or ends where a
/// `__func__` it replaces does (`insertions`: the function's).
fn outlinable(
    function: &Function,
    text: &[u8],
    map: &LineMap,
    region: &Region,
    insertions: &[Insertion],
) -> Option<Outline> {
    let body = function.node(function.body);
    let first = function.node(*body.children.first()?);
    // The run holds the last statement's `;`, the body's `}` follows.
    if first.start != region.start || text.get(skip_trivia(text, region.end)) != Some(&b'}') {
        return None;
    }
    let outline = outline(function, text, map, Declarators::Prototyped).ok()?;
    let touches = |&name: &(usize, usize)| insertions.iter().any(|i| i.meets(name));
    (!outline.function_names.iter().any(touches)).then_some(outline)
}

/// Makes the sites outside regions (`regions`: the extents replaced by
/// rendered regions) of a leaf function check its local countdown, loaded
/// after the entry's sites and stored at each `return` and at the end of
/// the body.
fn use_function_local(
    function: &Function,
    text: &[u8],
    local: &str,
    countdown: Countdown,
    regions: &[(usize, usize)],
    insertions: &mut Vec<Insertion>,
) {
    let in_region = |start: usize, end: usize| regions.iter().any(|&(s, e)| start >= s && end <= e);
    let returns = return_extents(function);
    let localiser = Localiser::new(local, &returns, countdown);
    for insertion in insertions.iter_mut() {
        if !insertion.prologue && !in_region(insertion.start, insertion.end) {
            localiser.localise(insertion);
        }
    }
    for (id, node) in function.nodes.iter().enumerate() {
        if matches!(node.kind, NodeKind::Return)
            && !in_region(node.start, node.end)
            && let Some(store) = store_before(function, text, id, local, countdown)
        {
            insertions.push(store);
        }
    }
    let body = function.node(function.body);
    // After the entry's sites (which use the global countdown) and before
    // anything else at the same offset, such as a region starting there:
    // insertions at one offset keep their order.
    let after_entry = insertions
        .iter()
        .rposition(|i| i.prologue)
        .map_or(0, |last| last + 1);
    insertions.insert(
        after_entry,
        Insertion {
            prologue: true,
            ..Insertion::point(
                body.start + 1,
                format!("__extension__ int {};", countdown.load(local)),
            )
        },
    );
    insertions.push(Insertion::point(
        body.end - 1,
        format!(" {}; ", countdown.store(local)),
    ));
}

/// The extents of a function's `return` statements.
fn return_extents(function: &Function) -> Vec<(usize, usize)> {
    function
        .nodes
        .iter()
        .filter(|n| matches!(n.kind, NodeKind::Return))
        .map(|n| (n.start, n.end))
        .collect()
}

/// Whether `start..end` lies in one of `returns`.
fn in_return(returns: &[(usize, usize)], start: usize, end: usize) -> bool {
    returns.iter().any(|&(s, e)| start >= s && end <= e)
}

/// Turns per-site checks of the global countdown into checks of a local
/// one, which touch the global one only to draw a sample. Inside a
/// `return` (`returns`), which stores the local first, sites keep the
/// global countdown.
struct Localiser<'r> {
    /// The local countdown.
    check: String,
    returns: &'r [(usize, usize)],
    countdown: Countdown,
}

impl<'r> Localiser<'r> {
    fn new(local: &str, returns: &'r [(usize, usize)], countdown: Countdown) -> Self {
        Localiser {
            check: local.to_owned(),
            returns,
            countdown,
        }
    }

    fn localise(&self, insertion: &mut Insertion) {
        if in_return(self.returns, insertion.start, insertion.end) {
            return;
        }
        let with = |scale| self.countdown.local_check(&self.check, scale);
        insertion.open = rewrite_checks(&insertion.open, &with);
        insertion.close = rewrite_checks(&insertion.close, &with);
    }
}

/// Jump statement `id` in braces after storing `local` into the global
/// countdown.
fn store_before(
    function: &Function,
    text: &[u8],
    id: NodeId,
    local: &str,
    countdown: Countdown,
) -> Option<Insertion> {
    let stop = statement_end(function, text, id)?;
    Some(Insertion::wrap(
        function.node(id).start,
        stop,
        0,
        format!("{{ {}; ", countdown.store(local)),
        " }".to_owned(),
    ))
}

/// The flag of a warm function's per-region copy (warm.rs): set in a
/// sampled call, where every region takes its SLOW copy and every site
/// observes, and the countdown is left to the calls it makes. Elsewhere
/// the name is the prelude's enumeration constant 0, which gcc folds away
/// (an enumeration constant, not a `static` object: C99 inline functions
/// may refer to it).
pub(super) const FORCED: &str = "__cbi_forced";

/// How the countdown is read and written in one function's rendering:
/// `forced`, it honours [`FORCED`] (a function that may be warm). Forced,
/// a local countdown holds 0 and its draw samples without touching the
/// global one, so that the FAST loops' and iterations' own tests are the
/// same instructions as without the flag; only the global tests (regions
/// across calls) read it at each execution.
#[derive(Debug, Clone, Copy)]
pub(super) struct Countdown {
    pub forced: bool,
}

impl Countdown {
    /// The per-site check on a local countdown `local` of a site of
    /// `scale` (at least 1): the global one is only touched to draw a
    /// sample.
    fn local_check(self, local: &str, scale: u32) -> String {
        if scale == 1 {
            format!(
                "(__builtin_expect(--{local} < 0, 0) && {} ? ",
                self.draw(local)
            )
        } else {
            format!(
                "(__builtin_expect(({local} -= {scale}) < 0, 0) && {} ? ",
                self.draw(local)
            )
        }
    }

    /// With `-fsample-regions`, the test that chooses FAST for one
    /// execution of a region of `scale` on local countdown `local`: FAST
    /// unless the execution is sampled (the countdown, decremented by the
    /// scale, ran out and the runtime draws it). Scale 0 (a site at
    /// rate 1) is never FAST: a declaration run's flag is then 0, and
    /// other regions are their SLOW copy alone, without a test.
    fn region_test(self, local: &str, scale: u32) -> String {
        match scale {
            0 => "0".to_owned(),
            s => format!(
                "__builtin_expect({}, 1) || !{}",
                region_decrement(local, s),
                self.draw(local)
            ),
        }
    }

    /// The test of a region that holds weighty calls
    /// (`-fsample-across-calls`), of `scale`: its execution is an event of
    /// the global countdown, FAST unless sampled, as `--cbi_countdown < 0
    /// && cbi_sample()` decides for a site outside regions (scale 0: never
    /// FAST, as [`Countdown::region_test`]). Forced, never FAST either.
    fn global_region_test(self, scale: u32) -> String {
        let test = match scale {
            0 => return "0".to_owned(),
            1 => "__builtin_expect(--cbi_countdown >= 0, 1) || !cbi_sample()".to_owned(),
            s => format!("__builtin_expect((cbi_countdown -= {s}) >= 0, 1) || !cbi_sample()"),
        };
        if self.forced {
            format!("__builtin_expect(!{FORCED}, 1) && ({test})")
        } else {
            test
        }
    }

    /// Loads local countdown `local` from the global one (forced: 0).
    fn load(self, local: &str) -> String {
        if self.forced {
            format!("{local} = {FORCED} ? 0 : cbi_countdown")
        } else {
            load_local(local)
        }
    }

    /// Stores local countdown `local` into the global one (forced: not).
    fn store(self, local: &str) -> String {
        if self.forced {
            format!("({FORCED} ? (void)0 : (void)({}))", store_local(local))
        } else {
            store_local(local)
        }
    }

    /// Asks the runtime whether the event that brought local countdown
    /// `local` below zero is sampled, which also draws the next countdown:
    /// the global countdown is touched only here. Forced, the event is
    /// sampled and the local goes back to 0, so that the next one is too.
    fn draw(self, local: &str) -> String {
        let draw = format!(
            "({}, cbi_sample() ? ({}, 1) : ({}, 0))",
            store_local(local),
            load_local(local),
            load_local(local)
        );
        if self.forced {
            format!("({FORCED} ? ({local} = 0, 1) : {draw})")
        } else {
            draw
        }
    }
}

/// Whether one execution of a region of `scale` (at least 1) takes the
/// global countdown below zero: the runtime then draws whether it is
/// sampled (an outlined SLOW copy's call, which draws itself).
fn global_region_ran_out(scale: u32) -> String {
    match scale {
        1 => "__builtin_expect(--cbi_countdown < 0, 0)".to_owned(),
        s => format!("__builtin_expect((cbi_countdown -= {s}) < 0, 0)"),
    }
}

/// One execution of a region of `scale` (at least 1) taken from local
/// countdown `local`: true while the countdown lasts.
fn region_decrement(local: &str, scale: u32) -> String {
    match scale {
        1 => format!("--{local} >= 0"),
        s => format!("({local} -= {s}) >= 0"),
    }
}

/// Gives back to local countdown `local` the execution of a region of
/// `scale` that [`region_decrement`] took.
fn region_undo(local: &str, scale: u32) -> String {
    match scale {
        1 => format!("++{local}"),
        s => format!("{local} += {s}"),
    }
}

/// Whether warm counter `counter` (`-fsample-warm-loops`,
/// `-fsample-warm-functions`) has reached [`WARM_EXECUTIONS`]. The counters
/// are read and written with relaxed atomics: threads lose increments but
/// race on nothing.
pub(super) fn warmed(counter: &str) -> String {
    format!("__atomic_load_n(&{counter}, 0) >= {WARM_EXECUTIONS}U")
}

/// Counts one execution on warm counter `counter` (a statement).
pub(super) fn count_execution(counter: &str) -> String {
    format!("__atomic_store_n(&{counter}, __atomic_load_n(&{counter}, 0) + 1U, 0);")
}

/// A local countdown holds what the global one holds (runtime ABI 2): the
/// events before the thread's next sample, so that "the countdown ran
/// out" is "it went negative", the sign of the decrement itself, which
/// gcc reads from the flags of the `sub` (`sub; js`), where a test against
/// zero costs a `test` more on every event (callgrind on zlib's
/// `longest_match`: two of its 21 instructions per step of the hash
/// chain). On the global countdown it also lets gcc decrement in memory
/// (`subl $1, %fs:…; js`) instead of a load, a `sub`, a store and a
/// `test`.
fn load_local(local: &str) -> String {
    format!("{local} = cbi_countdown")
}

/// Stores local countdown `local` into the global one.
fn store_local(local: &str) -> String {
    format!("cbi_countdown = {local}")
}

/// The loop whose body [`Renderer::piece`] renders: `continue`s that
/// target it go to `continue_label`; in the FAST loop of a split loop,
/// `break`s that target it go to `break_label`, since a `break` would
/// leave the FAST loop only.
#[derive(Debug, Clone, Copy)]
struct Looping<'l> {
    node: NodeId,
    continue_label: &'l str,
    break_label: Option<&'l str>,
}

/// With `-fsample-regions`, what a site's check becomes in the
/// instrumented copy of a region, which runs only when the region's
/// execution is sampled: every site observes.
const OBSERVED: &str = "(1 ? ";

/// Why no region of `function` may be cloned, if none may.
fn unclonable_function(function: &Function, text: &[u8]) -> Option<&'static str> {
    for node in &function.nodes {
        match &node.kind {
            NodeKind::Jump(Jump::Computed) => return Some("computed goto"),
            NodeKind::Call(call)
                if call
                    .direct
                    .as_deref()
                    .is_some_and(|name| RETURNS_TWICE.contains(&name)) =>
            {
                return Some("setjmp");
            }
            _ => {}
        }
    }
    let body = function.node(function.body);
    let body_text = &text[body.start..body.end];
    if body_text.windows(9).any(|w| w == b"__label__") {
        return Some("local label declaration");
    }
    None
}

/// The most nodes (statements and expressions) of a loop that
/// `-fsample-whole-loops` makes one region for its whole execution: about
/// a line or two of C, where one countdown check per iteration costs as
/// much as the iteration.
const WHOLE_LOOP_NODES: u32 = 128;

/// The most syntax nodes a nested run's loops may have together
/// (`-fsample-nested-runs`): each copy of the run holds them, FAST and
/// SLOW copies of their own regions included, so they cost four times
/// their size where they cost twice. In sqlite3.c, 80 takes the runs
/// that pay (`vdbeSorterCompareInt`'s loop has 72 nodes, `freeSpace`'s
/// 62): the shell runs as few instructions as with 200, and the object's
/// text grows 3.1% where 200 made it grow 5.4% (BENCHMARKS.md, "Sampling:
/// runs that hold loops").
const NESTED_RUN_HOLE_NODES: u32 = 80;

struct Planner<'a> {
    function: &'a Function,
    text: &'a [u8],
    /// Sites on each node itself, in its subtree, and on the heaviest path
    /// through its subtree.
    own: Vec<u32>,
    sum: Vec<u32>,
    path: Vec<u32>,
    /// The subtree holds a weighty call, a loop that iterates, a named
    /// label.
    weighty: Vec<bool>,
    cyclic: Vec<bool>,
    named_label: Vec<bool>,
    /// The subtree holds a call (other than to a `__builtin_`), and its
    /// number of nodes: what makes a loop small enough to be one region
    /// for its whole execution (`-fsample-whole-loops`).
    calls: Vec<bool>,
    size: Vec<u32>,
    whole_loops: bool,
    /// Runs may hold weighty calls (`-fsample-across-calls`).
    across_calls: bool,
    /// A loop's iteration may hold loops (`-fsample-nested-loops`), and
    /// whether the planner is inside such a region's inner loops (whose
    /// regions are then not nested again: each level doubles the copies).
    nested_loops: bool,
    nesting: bool,
    /// A run may hold small innermost loops (`-fsample-nested-runs`).
    nested_runs: bool,
    /// `-fsample-regions`: a region's execution is one event, whatever
    /// paths it takes, so a backward `goto` inside it is no obstacle.
    per_region: bool,
    /// Keys of the `static` locals that no region may copy, ascending.
    statics: Vec<usize>,
    labels: HashMap<&'a str, NodeId>,
    /// The extents of the `goto`s to each named label, gathered once so
    /// that asking whether a jump from outside reaches a label of a
    /// candidate region costs the label's gotos, not the function's nodes.
    gotos: HashMap<&'a str, Vec<(usize, usize)>>,
    regions: Vec<Region>,
    stats: RegionStats,
}

impl<'a> Planner<'a> {
    fn new(
        function: &'a Function,
        text: &'a [u8],
        marks: &[Mark],
        is_weighty: &dyn Fn(&Call) -> bool,
        forms: Forms,
    ) -> Self {
        let n = function.nodes.len();
        let mut own = vec![0u32; n];
        for mark in marks {
            own[mark.node] += mark.checks;
        }
        let nested_loops = forms.per_region && forms.across_calls && forms.nested_loops;
        let mut planner = Planner {
            function,
            text,
            sum: own.clone(),
            path: own.clone(),
            own,
            weighty: vec![false; n],
            cyclic: vec![false; n],
            named_label: vec![false; n],
            calls: vec![false; n],
            size: vec![1; n],
            whole_loops: forms.per_region && forms.whole_loops,
            across_calls: forms.per_region && forms.across_calls,
            nested_loops,
            nesting: false,
            nested_runs: nested_loops && forms.nested_runs,
            statics: function
                .locals
                .iter()
                .filter(|v| v.storage == crate::frontend::Storage::StaticLocal)
                .filter(|v| !duplicable_static(function, text, v))
                .map(|v| v.key)
                .collect(),
            per_region: forms.per_region,
            labels: HashMap::new(),
            gotos: HashMap::new(),
            regions: Vec::new(),
            stats: RegionStats::default(),
        };
        for node in &function.nodes {
            if let NodeKind::Jump(Jump::Goto(target)) = &node.kind {
                planner
                    .gotos
                    .entry(target.as_str())
                    .or_default()
                    .push((node.start, node.end));
            }
        }
        planner.statics.sort_unstable();
        for id in post_order(function) {
            planner.summarise(id, is_weighty);
        }
        planner
    }

    /// Computes the node's aggregates from its children's.
    fn summarise(&mut self, id: NodeId, is_weighty: &dyn Fn(&Call) -> bool) {
        let function = self.function;
        let node = function.node(id);
        let children = &node.children;
        let mut sum = self.own[id];
        let (mut weighty, mut cyclic, mut named) = (false, false, false);
        let (mut calls, mut size) = (false, 1u32);
        for &child in children {
            sum += self.sum[child];
            weighty |= self.weighty[child];
            cyclic |= self.cyclic[child];
            named |= self.named_label[child];
            calls |= self.calls[child];
            size = size.saturating_add(self.size[child]);
        }
        let path_of = |c: Option<&NodeId>| c.map_or(0, |&c| self.path[c]);
        let sequence: u32 = children.iter().map(|&c| self.path[c]).sum();
        let path = self.own[id]
            + match &node.kind {
                NodeKind::If => {
                    path_of(children.first())
                        + path_of(children.get(1)).max(path_of(children.get(2)))
                }
                NodeKind::Conditional if children.len() == 3 => {
                    path_of(children.first())
                        + path_of(children.get(1)).max(path_of(children.get(2)))
                }
                NodeKind::Switch => sum - self.own[id],
                _ => sequence,
            };
        // A small innermost loop without calls, as a block: runs (and the
        // iteration of an enclosing loop) hold it whole.
        let whole = self.whole_loops && !cyclic && !calls && size <= WHOLE_LOOP_NODES;
        match &node.kind {
            NodeKind::Call(call) if node.evaluated => {
                calls |= !call
                    .direct
                    .as_deref()
                    .is_some_and(|name| name.starts_with("__builtin_"));
                weighty |= is_weighty(call);
            }
            NodeKind::While | NodeKind::For { .. } => cyclic = !whole,
            NodeKind::Do if !self.runs_once(id) => cyclic = !whole,
            NodeKind::Labelled(Label::Named(name)) => {
                named = true;
                self.labels.insert(name.as_str(), id);
            }
            _ => {}
        }
        self.sum[id] = sum;
        self.path[id] = path;
        self.weighty[id] = weighty;
        self.cyclic[id] = cyclic;
        self.named_label[id] = named;
        self.calls[id] = calls;
        self.size[id] = size;
    }

    /// `do ... while (0)`: a block, not a loop.
    fn runs_once(&self, id: NodeId) -> bool {
        let function = self.function;
        function.node(id).children.last().is_some_and(|&c| {
            matches!(
                function.node(function.strip_parens(c)).kind,
                NodeKind::IntegerLiteral(0)
            )
        })
    }

    fn plan_statement(&mut self, id: NodeId) {
        if self.sum[id] == 0 {
            return;
        }
        match self.function.node(id).kind {
            NodeKind::Compound => {
                let items = self.function.node(id).children.clone();
                self.plan_items(&items, true, true);
            }
            _ => self.plan_items(&[id], true, true),
        }
    }

    /// Groups a block's statements into runs; statements that cannot be in
    /// one are searched for smaller regions. `reaches_end`: the last item
    /// ends its block; `nest_runs`: statements with small innermost loops
    /// may join a run, the loops its holes ([`Planner::joins_run`]).
    fn plan_items(&mut self, items: &[NodeId], reaches_end: bool, nest_runs: bool) {
        let mut run: Vec<NodeId> = Vec::new();
        let mut run_start = 0;
        for &item in items {
            let inner = self.strip_labels(item);
            if inner != item {
                self.flush(&mut run, run_start, false);
            }
            // `__attribute__((fallthrough));` must stay just before the
            // next label, also at the end of a block.
            if self.is_fallthrough(inner) {
                self.flush(&mut run, run_start, false);
                self.descend(inner);
                continue;
            }
            if let Some(reason) = self.boundary(inner, nest_runs) {
                self.flush(&mut run, run_start, false);
                if let Some(reason) = reason
                    && self.sum[inner] >= 2
                {
                    self.stats.fall_back(reason);
                }
                self.descend(inner);
                continue;
            }
            if run.is_empty() {
                run_start = self.function.node(inner).start;
            }
            run.push(item);
        }
        self.flush(&mut run, run_start, reaches_end);
    }

    /// Whether statement `id` is a fallthrough attribute (on an empty
    /// statement).
    fn is_fallthrough(&self, id: NodeId) -> bool {
        let node = self.function.node(id);
        // A block ending with one (`case X: { ...; FALLTHROUGH; }`).
        if matches!(node.kind, NodeKind::Compound) {
            return node
                .children
                .last()
                .is_some_and(|&last| self.is_fallthrough(self.strip_labels(last)));
        }
        let end = statement_end(self.function, self.text, id).unwrap_or(node.end);
        let spelled = &self.text[node.start..end.max(node.start)];
        // GNU `__attribute__((fallthrough))` or C23 `[[fallthrough]]`
        // (gnulib's FALLTHROUGH with gcc 12 is `[[__fallthrough__]]`).
        (spelled.starts_with(b"__attribute__") || spelled.starts_with(b"[["))
            && spelled.windows(11).any(|w| w == b"fallthrough")
    }

    /// The statement under `id`'s labels.
    fn strip_labels(&self, mut id: NodeId) -> NodeId {
        while let NodeKind::Labelled(_) = self.function.node(id).kind {
            match self.function.node(id).children.last() {
                Some(&sub) => id = sub,
                None => break,
            }
        }
        id
    }

    /// Whether statement `id` cannot be part of a run: `Some(None)` for
    /// the program's structure (a loop or weighty call inside),
    /// `Some(Some(reason))` for what cloning cannot copy.
    fn boundary(&self, id: NodeId, nest_runs: bool) -> Option<Option<&'static str>> {
        if (self.weighty[id] && !self.across_calls)
            || (self.cyclic[id] && !(nest_runs && self.joins_run(id)))
        {
            return Some(None);
        }
        let node = self.function.node(id);
        // A statement with loops that cannot join a run is searched as
        // before, where its loops and blocks say why they fall back.
        let reason = |reason| Some((!self.cyclic[id]).then_some(reason));
        if self.has_static(node.start, node.end) {
            return reason("static local");
        }
        if self.has_outer_case(id, node.start, node.end) {
            return reason("case label of an outer switch");
        }
        None
    }

    /// Whether statement `id`, which holds loops, may still join a run
    /// (`-fsample-nested-runs`), its loops the run's holes: outside other
    /// nested regions' inner loops, and each of its loops innermost (a
    /// loop with loops inside may be a nested loop region of its own,
    /// which a hole could not be) and, together, at most
    /// [`NESTED_RUN_HOLE_NODES`] nodes (each copy of the run holds them).
    fn joins_run(&self, id: NodeId) -> bool {
        if !self.nested_runs || self.nesting {
            return false;
        }
        let function = self.function;
        let loops = self.inner_loops(id);
        let innermost = loops.iter().all(|&l| {
            let parts = loop_parts(function, l);
            [parts.init, parts.condition, parts.step, parts.body]
                .into_iter()
                .flatten()
                .all(|part| !self.cyclic[part])
        });
        let size: u32 = loops.iter().map(|&l| self.size[l]).sum();
        innermost && size <= NESTED_RUN_HOLE_NODES
    }

    /// Whether a run of `items` holding loops (`holes`) saves events: its
    /// own sites would otherwise be taken by two events or more (two
    /// stretches of statements with sites apart from the loops, or a
    /// statement with sites of its own beside its loops, an `if`'s
    /// condition, and another), so that one event per execution pays for
    /// its loops' copies.
    fn nesting_saves(&self, items: &[NodeId], holes: &[NodeId]) -> bool {
        let function = self.function;
        let mut groups = 0;
        let mut stretch = false;
        for &item in items {
            if self.cyclic[item] {
                let n = function.node(item);
                let looped: u32 = holes
                    .iter()
                    .filter(|&&h| {
                        let hole = function.node(h);
                        hole.start >= n.start && hole.end <= n.end
                    })
                    .map(|&h| self.sum[h])
                    .sum();
                groups += usize::from(stretch) + usize::from(self.sum[item] > looped);
                stretch = false;
            } else if self.sum[item] > 0 {
                stretch = true;
            }
        }
        groups + usize::from(stretch) >= 2
    }

    fn has_static(&self, start: usize, end: usize) -> bool {
        let first = self.statics.partition_point(|&key| key < start);
        self.statics.get(first).is_some_and(|&key| key < end)
    }

    /// Whether the subtree of `root` (extent `start..end`) holds a `case`
    /// or `default` label of a `switch` outside it.
    fn has_outer_case(&self, root: NodeId, start: usize, end: usize) -> bool {
        let function = self.function;
        subtree(function, root).any(|id| {
            matches!(
                function.node(id).kind,
                NodeKind::Labelled(Label::Case | Label::Default)
            ) && enclosing(function, id, |kind| matches!(kind, NodeKind::Switch)).is_none_or(
                |switch| {
                    let s = function.node(switch);
                    s.start < start || s.end > end
                },
            )
        })
    }

    /// Searches a statement that cannot join a run for regions inside it.
    fn descend(&mut self, id: NodeId) {
        let function = self.function;
        let node = function.node(id);
        match node.kind {
            NodeKind::Compound => self.plan_statement(id),
            NodeKind::If => {
                if let Some(&condition) = node.children.first() {
                    self.plan_expression(condition, Expression::Condition);
                }
                for &child in node.children.iter().skip(1) {
                    self.plan_statement(child);
                }
            }
            NodeKind::Switch => {
                if let Some(&body) = node.children.last() {
                    self.plan_statement(body);
                }
            }
            NodeKind::While | NodeKind::For { .. } | NodeKind::Do => {
                if self.plan_loop(id) {
                    return;
                }
                // A loop with loops inside: its condition and step are
                // regions of their own, checked on each iteration, and its
                // initialisation one checked once (an expression: a
                // declaration's scope would end with the region).
                let parts = loop_parts(function, id);
                if let Some(init) = parts.init
                    && !is_declaration(function, init)
                {
                    self.plan_expression(init, Expression::Discarded);
                }
                if let Some(condition) = parts.condition {
                    self.plan_expression(condition, Expression::Condition);
                }
                if let Some(step) = parts.step {
                    self.plan_expression(step, Expression::Discarded);
                }
                if let Some(body) = parts.body {
                    self.plan_statement(body);
                }
            }
            _ => {}
        }
    }

    /// Expression `id` as a region of its own, if it holds two sites or
    /// more and neither weighty calls nor jumps.
    fn plan_expression(&mut self, id: NodeId, use_: Expression) {
        let function = self.function;
        if self.sum[id] < 2 || self.weighty[id] || self.cyclic[id] {
            return;
        }
        if holds_jump(function, id) {
            self.stats.fall_back("jump in an expression");
            return;
        }
        let node = function.node(id);
        if let Some(reason) = self.unclonable_extent(node.start, node.end) {
            self.stats.fall_back(reason);
            return;
        }
        self.regions.push(Region {
            shape: Shape::Expression { use_ },
            start: node.start,
            end: node.end,
            weight: self.path[id],
            sites: self.sum[id],
            across_calls: false,
            holes: Vec::new(),
            lone: false,
        });
    }

    /// Ends the current run: a region if it holds at least two sites (one
    /// site is cheaper with its own check). A run that stops before the
    /// end of its block must not hold declarations, whose scope would
    /// shrink: it is split around them.
    fn flush(&mut self, run: &mut Vec<NodeId>, run_start: usize, reaches_end: bool) {
        if run.is_empty() {
            return;
        }
        let items = std::mem::take(run);
        let function = self.function;
        let mut segments: Vec<(usize, Vec<NodeId>)> = Vec::new();
        if reaches_end {
            segments.push((run_start, items));
        } else {
            let mut current: Vec<NodeId> = Vec::new();
            let mut declarations: Vec<NodeId> = Vec::new();
            let mut start = run_start;
            for (index, item) in items.into_iter().enumerate() {
                if is_declaration(function, item) {
                    if !current.is_empty() {
                        segments.push((start, std::mem::take(&mut current)));
                    }
                    declarations.push(item);
                    continue;
                }
                self.plan_declarations(&mut declarations);
                if current.is_empty() {
                    start = if index == 0 {
                        run_start
                    } else {
                        function.node(item).start
                    };
                }
                current.push(item);
            }
            self.plan_declarations(&mut declarations);
            if !current.is_empty() {
                segments.push((start, current));
            }
        }
        for (start, items) in segments {
            let Some(&last) = items.last() else {
                continue;
            };
            // Loops the run holds (`-fsample-nested-runs`): if one event
            // would not take the place of several, the run is planned
            // again with its loops as boundaries.
            let holes: Vec<NodeId> = items
                .iter()
                .filter(|&&i| self.cyclic[i])
                .flat_map(|&i| self.inner_loops(i))
                .collect();
            if !holes.is_empty() && !self.nesting_saves(&items, &holes) {
                self.plan_items(&items, reaches_end, false);
                continue;
            }
            let inner: u32 = holes.iter().map(|&h| self.sum[h]).sum();
            let sites: u32 = items.iter().map(|&i| self.sum[i]).sum::<u32>() - inner;
            let named = items.iter().any(|&i| self.named_label[i]);
            // With labels inside, a forward goto can join any two paths:
            // every site is then on one path (and with loops inside, each
            // of the run's own sites is counted once, as a nested loop's).
            let weight = if named || !holes.is_empty() {
                sites
            } else {
                items.iter().map(|&i| self.path[i]).sum()
            };
            if weight < 2 {
                if !holes.is_empty() {
                    self.plan_items(&items, reaches_end, false);
                }
                continue;
            }
            let Some(end) = statement_end(function, self.text, last) else {
                self.stats.fall_back("statement end not found");
                continue;
            };
            if let Some(reason) = self.unclonable_extent(start, end) {
                // What makes the run unclonable (a backward `goto`, say) is
                // in one statement, or between two: the statements' own
                // blocks, branches and loops may still be regions.
                self.stats.fall_back(reason);
                for &item in &items {
                    self.descend(self.strip_labels(item));
                }
                continue;
            }
            let Some(extents) = self.hole_extents(&holes) else {
                self.stats.fall_back("statement end not found");
                self.plan_items(&items, reaches_end, false);
                continue;
            };
            let ends_in_jump = never_falls_through(function, last);
            self.regions.push(Region {
                shape: Shape::Run { ends_in_jump },
                start,
                end,
                weight,
                sites,
                across_calls: items.iter().any(|&i| self.weighty[i]),
                holes: extents,
                lone: false,
            });
            self.plan_holes(holes);
        }
    }

    /// The extents of a nested region's inner loops (`holes`), or `None`
    /// when the end of one cannot be found.
    fn hole_extents(&self, holes: &[NodeId]) -> Option<Vec<(usize, usize)>> {
        let function = self.function;
        holes
            .iter()
            .map(|&hole| {
                statement_end(function, self.text, hole)
                    .map(|hole_end| (function.node(hole).start, hole_end))
            })
            .collect()
    }

    /// The regions of a nested region's inner loops, which each of its
    /// copies will hold (not nested again).
    fn plan_holes(&mut self, holes: Vec<NodeId>) {
        if holes.is_empty() {
            return;
        }
        self.nesting = true;
        for hole in holes {
            self.descend(hole);
        }
        self.nesting = false;
    }

    /// Consecutive declarations that a region cannot hold (their scope
    /// goes on after it): their sites check a local countdown, loaded
    /// before the first and stored after the last, instead of the global
    /// one. No copy is made.
    fn plan_declarations(&mut self, declarations: &mut Vec<NodeId>) {
        let items = std::mem::take(declarations);
        let function = self.function;
        let (Some(&first), Some(&last)) = (items.first(), items.last()) else {
            return;
        };
        let sites: u32 = items.iter().map(|&i| self.sum[i]).sum();
        // A call that uses the global countdown cannot come between the
        // local's load and its store (`-fsample-across-calls`).
        if sites < 2 || items.iter().any(|&i| self.weighty[i]) {
            return;
        }
        let start = function.node(first).start;
        let Some(end) = statement_end(function, self.text, last) else {
            self.stats.fall_back("statement end not found");
            return;
        };
        if items.iter().any(|&item| holds_jump(function, item)) {
            self.stats.fall_back("jump in a declaration");
            return;
        }
        if let Some(reason) = self.unclonable_extent(start, end) {
            self.stats.fall_back(reason);
            return;
        }
        self.regions.push(Region {
            shape: Shape::Declarations,
            start,
            end,
            weight: sites,
            sites,
            across_calls: false,
            holes: Vec::new(),
            lone: false,
        });
    }

    /// One iteration of loop `id` as a region, if it can be one.
    fn plan_loop(&mut self, id: NodeId) -> bool {
        let function = self.function;
        let node = function.node(id);
        let parts = loop_parts(function, id);
        let Some(body) = parts.body else {
            return false;
        };
        let iteration = [parts.condition, parts.step, Some(body)];
        let iteration = iteration.iter().flatten().copied();
        if iteration
            .clone()
            .any(|part| self.weighty[part] && !self.across_calls)
        {
            return false;
        }
        // Loops inside: with `-fsample-nested-loops`, in the body only and
        // outside other nested regions (the inner regions' copies are
        // rendered once per copy of this one, each copy with its own
        // names for their labels: `Renderer::copy_label`).
        let mut holes = Vec::new();
        if iteration.clone().any(|part| self.cyclic[part]) {
            if !self.nested_loops
                || self.nesting
                || [parts.condition, parts.step]
                    .into_iter()
                    .flatten()
                    .any(|part| self.cyclic[part])
            {
                return false;
            }
            holes = self.inner_loops(body);
        }
        let across_calls = iteration.clone().any(|part| self.weighty[part]);
        let inner: u32 = holes.iter().map(|&hole| self.sum[hole]).sum();
        let sites: u32 = iteration.clone().map(|p| self.sum[p]).sum::<u32>() - inner;
        // A nested region with one site of its own saves nothing on that
        // site's check and doubles its inner loops' code.
        if sites == 0 || (!holes.is_empty() && sites < 2) {
            return false;
        }
        if self.has_static(node.start, node.end) {
            self.stats.fall_back("static local");
            return false;
        }
        if self.has_outer_case(id, node.start, node.end) {
            self.stats.fall_back("case label of an outer switch");
            return false;
        }
        for part in [parts.init, parts.condition, parts.step]
            .into_iter()
            .flatten()
        {
            if holds_jump(function, part) {
                self.stats.fall_back("jump in a loop header");
                return false;
            }
        }
        let named = self.named_label[body];
        let weight = if named || !holes.is_empty() {
            sites
        } else {
            iteration.map(|p| self.path[p]).sum()
        };
        let Some(end) = statement_end(function, self.text, id) else {
            self.stats.fall_back("statement end not found");
            return false;
        };
        let Some(extents) = self.hole_extents(&holes) else {
            self.stats.fall_back("statement end not found");
            return false;
        };
        if let Some(reason) = self.unclonable_extent(node.start, end) {
            self.stats.fall_back(reason);
            return false;
        }
        self.regions.push(Region {
            shape: Shape::Loop { node: id },
            start: node.start,
            end,
            weight,
            sites,
            across_calls,
            holes: extents,
            lone: false,
        });
        // The inner loops' own regions (`nesting` is false here, or there
        // are no holes).
        self.plan_holes(holes);
        true
    }

    /// The outermost loops (that iterate) inside `body`.
    fn inner_loops(&self, body: NodeId) -> Vec<NodeId> {
        let function = self.function;
        let mut found = Vec::new();
        let mut stack = vec![body];
        while let Some(id) = stack.pop() {
            if !self.cyclic[id] {
                continue;
            }
            let node = function.node(id);
            let is_loop = match node.kind {
                NodeKind::While | NodeKind::For { .. } => true,
                NodeKind::Do => !self.runs_once(id),
                _ => false,
            };
            if is_loop {
                found.push(id);
            } else {
                stack.extend(node.children.iter().rev());
            }
        }
        found
    }

    /// Checks of a whole region: no `goto` back to a label inside it (a
    /// loop), no jump inside a `return`'s value, no call that declares its
    /// callee implicitly.
    fn unclonable_extent(&self, start: usize, end: usize) -> Option<&'static str> {
        let function = self.function;
        let inside = |id: NodeId| {
            let n = function.node(id);
            n.start >= start && n.end <= end
        };
        for (id, node) in function.nodes.iter().enumerate() {
            if node.start < start || node.end > end {
                continue;
            }
            match &node.kind {
                // Per site, FAST's decrements are those of the heaviest
                // path, which a loop would make unbounded. Per region, the
                // loop it makes is observed whole or not at all in one
                // execution, as a whole loop's iterations are: each
                // evaluation keeps probability 1/sparsity.
                NodeKind::Jump(Jump::Goto(name)) if !self.per_region => {
                    if let Some(&label) = self.labels.get(name.as_str())
                        && inside(label)
                        && function.node(label).start < node.start
                    {
                        return Some("backward goto");
                    }
                }
                // A jump from outside would enter SLOW without the
                // region's test: its local unset (the write-back at the
                // end would store garbage in the countdown: jq's
                // jv_dtoa.c, "may be used uninitialized"), and every site
                // after the label observed on that path, unsampled.
                NodeKind::Labelled(Label::Named(name))
                    if self
                        .gotos
                        .get(name.as_str())
                        .is_some_and(|gotos| gotos.iter().any(|&(s, e)| s < start || e > end)) =>
                {
                    return Some("label reached from outside");
                }
                // gcc says "implicit declaration" at the first call only,
                // which would be the fast copy's, in system-header text.
                NodeKind::Call(call) if call.implicit => {
                    return Some("implicit declaration");
                }
                NodeKind::Return
                    if subtree(function, id).skip(1).any(|n| {
                        matches!(function.node(n).kind, NodeKind::Jump(_) | NodeKind::Return)
                    }) =>
                {
                    return Some("jump inside a return");
                }
                _ => {}
            }
        }
        None
    }
}

/// Whether `static` local `variable` may be defined once in each copy of
/// a region: a constant (a scalar, or an array of constant elements)
/// whose declaration takes no address and whose uses only read it (a
/// scalar's value, an array's scalar elements by subscript, never an
/// address of it or of an element), so that the two objects cannot be
/// told apart (`sqlite3VdbeExec` has six such tables, which kept its
/// dispatch loop from being a region). Structures and arrays of arrays
/// are left out.
pub(super) fn duplicable_static(function: &Function, text: &[u8], variable: &Variable) -> bool {
    // An array of constant elements is constant (`ty.is_const`).
    let ty = &variable.ty;
    let array = ty.spelling.ends_with(']');
    if !ty.is_const {
        return false;
    }
    // The declaration (a static's is opaque to the front end): the
    // smallest statement around its name.
    let declaration = function
        .nodes
        .iter()
        .enumerate()
        .filter(|(_, n)| n.is_statement && n.start <= variable.key && variable.key < n.end)
        .min_by_key(|(_, n)| n.end - n.start);
    let Some((statement, node)) = declaration else {
        return false;
    };
    let start = node.start;
    let end = statement_end(function, text, statement).unwrap_or(node.end);
    if text[start..end.max(start)].contains(&b'&') {
        return false;
    }
    // A scalar's value, or a scalar element of an array, read: no address
    // (of the object, or of an element) that could tell the copies apart.
    let scalar = |ty: Option<&crate::frontend::ValueType>| {
        ty.is_some_and(|ty| ty.class != crate::frontend::TypeClass::Other)
    };
    if !array && !scalar(Some(ty)) {
        return false;
    }
    // The node that uses `id`'s value, above parentheses and conversions
    // (an array's decay), and the child of it on `id`'s side.
    let user = |id: NodeId| {
        let mut used = id;
        let mut parent = function.node(id).parent;
        while let Some(p) = parent {
            if !matches!(function.node(p).kind, NodeKind::Paren | NodeKind::Implicit) {
                break;
            }
            used = p;
            parent = function.node(p).parent;
        }
        parent.map(|p| (p, used))
    };
    let read = |id: NodeId| {
        user(id).is_none_or(
            |(p, _)| !matches!(&function.node(p).kind, NodeKind::Unary(op) if op == "&"),
        )
    };
    function.nodes.iter().enumerate().all(|(id, node)| {
        if !matches!(node.kind, NodeKind::VarRef(key) if key == variable.key) {
            return true;
        }
        let Some((parent, used)) = user(id) else {
            return false;
        };
        let parent_node = function.node(parent);
        if !array {
            return read(id);
        }
        matches!(parent_node.kind, NodeKind::Subscript { array_base: true })
            && parent_node.children.first() == Some(&used)
            && scalar(parent_node.ty.as_ref())
            && read(parent)
    })
}

/// The parts of a loop: (condition, step, body).
struct LoopParts {
    init: Option<NodeId>,
    condition: Option<NodeId>,
    step: Option<NodeId>,
    body: Option<NodeId>,
}

fn loop_parts(function: &Function, id: NodeId) -> LoopParts {
    let node = function.node(id);
    match node.kind {
        NodeKind::For { .. } => match function.for_parts(id) {
            Some(parts) => LoopParts {
                init: parts.init,
                condition: parts.condition,
                step: parts.step,
                body: Some(parts.body),
            },
            None => LoopParts {
                init: None,
                condition: None,
                step: None,
                body: None,
            },
        },
        NodeKind::While => LoopParts {
            init: None,
            condition: node.children.first().copied(),
            step: None,
            body: node.children.get(1).copied(),
        },
        // `do body while (condition);`
        _ => LoopParts {
            init: None,
            condition: node.children.get(1).copied(),
            step: None,
            body: node.children.first().copied(),
        },
    }
}

/// A block item that declares something.
fn is_declaration(function: &Function, id: NodeId) -> bool {
    let node = function.node(id);
    matches!(node.kind, NodeKind::Statement | NodeKind::Opaque)
        && !node.children.is_empty()
        && node.children.iter().all(|&c| {
            matches!(
                function.node(c).kind,
                NodeKind::Decl { .. } | NodeKind::Opaque
            )
        })
        || matches!(node.kind, NodeKind::Decl { .. })
}

/// The offset just after statement `id`, its `;` included.
fn statement_end(function: &Function, text: &[u8], id: NodeId) -> Option<usize> {
    let node = function.node(id);
    match node.kind {
        NodeKind::Compound => {
            (text.get(node.end.checked_sub(1)?) == Some(&b'}')).then_some(node.end)
        }
        NodeKind::If
        | NodeKind::While
        | NodeKind::For { .. }
        | NodeKind::Switch
        | NodeKind::Labelled(_) => statement_end(function, text, *node.children.last()?),
        _ => {
            if node.end > node.start && text.get(node.end - 1) == Some(&b';') {
                return Some(node.end);
            }
            let next = skip_trivia(text, node.end);
            (text.get(next) == Some(&b';')).then_some(next + 1)
        }
    }
}

/// The nearest ancestor of `id` whose kind `wanted` accepts.
fn enclosing(
    function: &Function,
    id: NodeId,
    wanted: impl Fn(&NodeKind) -> bool,
) -> Option<NodeId> {
    let mut at = function.node(id).parent;
    while let Some(parent) = at {
        if wanted(&function.node(parent).kind) {
            return Some(parent);
        }
        at = function.node(parent).parent;
    }
    None
}

/// The loop (or, for a `break`, the switch) that jump `id` leaves.
fn jump_target(function: &Function, id: NodeId, include_switch: bool) -> Option<NodeId> {
    enclosing(function, id, |kind| match kind {
        NodeKind::While | NodeKind::For { .. } | NodeKind::Do => true,
        NodeKind::Switch => include_switch,
        _ => false,
    })
}

/// Whether the subtree of `id` holds a jump, a `return` or a label (in a
/// statement expression): what an expression or declaration copied
/// without the jump handling of statements must not hold.
fn holds_jump(function: &Function, id: NodeId) -> bool {
    subtree(function, id).any(|n| {
        matches!(
            function.node(n).kind,
            NodeKind::Jump(_) | NodeKind::Return | NodeKind::Labelled(_)
        )
    })
}

/// Nodes in post-order (children before parents), without recursion.
fn post_order(function: &Function) -> Vec<NodeId> {
    let mut order = Vec::with_capacity(function.nodes.len());
    let mut stack = vec![(function.body, false)];
    while let Some((id, expanded)) = stack.pop() {
        if expanded {
            order.push(id);
            continue;
        }
        stack.push((id, true));
        for &child in function.node(id).children.iter().rev() {
            stack.push((child, false));
        }
    }
    order
}

/// `root` and its descendants, in pre-order.
pub(super) fn subtree(function: &Function, root: NodeId) -> impl Iterator<Item = NodeId> + '_ {
    let mut stack = vec![root];
    std::iter::from_fn(move || {
        let id = stack.pop()?;
        stack.extend(function.node(id).children.iter().rev());
        Some(id)
    })
}

struct Renderer<'a> {
    function: &'a Function,
    text: &'a [u8],
    map: &'a LineMap,
    marks: &'a [Mark],
    /// The function's named labels.
    labels: HashMap<&'a str, NodeId>,
    /// The planner's facts on each node's subtree: it holds a call (other
    /// than to a `__builtin_`), its number of nodes, and whether it holds
    /// a named label.
    calls: Vec<bool>,
    size: Vec<u32>,
    named_label: Vec<bool>,
    /// The extents of the function's `return` statements.
    returns: Vec<(usize, usize)>,
    /// In a leaf function (no weighty call), the function's own local
    /// countdown, loaded at its entry and stored at its `return`s: regions
    /// then neither load nor store the global one.
    shared: Option<String>,
    /// `-fsample-regions`: each execution of a region is one event; FAST
    /// is the original code and SLOW observes every site.
    per_region: bool,
    /// `-fsample-split-loops` (with `per_region`): FAST iterations of a
    /// loop region run in a loop of their own.
    split_loops: bool,
    /// `-fsample-counted-loops` (with `split_loops`): that loop is bounded
    /// by the loop's own variable where it counts one (counted.rs).
    counted_loops: bool,
    /// `-fsample-counted-plain-loops` (with `counted_loops`): a small
    /// counted `for` loop also holds the user's loop in FAST.
    counted_plain_loops: bool,
    /// `-fsample-unrolled-loops` (with `split_loops`): a small loop that
    /// is not counted runs its FAST iterations [`UNROLL`] to a decrement.
    unrolled_loops: bool,
    /// `-fsample-warm-loops`: the unit's array of loop executions, by
    /// region number ([`Renderer::warm`]).
    warm_counters: Option<&'a str>,
    /// How its countdown is read and written (forced in a function that
    /// may be warm).
    countdown: Countdown,
    /// While a nested loop region's copies are rendered, what each copy
    /// holds of its inner loops.
    nest: RefCell<Option<Nest>>,
    /// While an inner region is rendered into a nested region's FAST copy:
    /// all its text is system-header text, and its `goto`s to labels of
    /// that copy (in this extent) go to their FAST names.
    in_fast: Cell<Option<(usize, usize)>>,
}

/// The inner loops of a nested loop region, as its copies hold them.
struct Nest {
    /// The inner regions' extents, each rendered by its own replacement.
    inner: Vec<(usize, usize)>,
    /// For the FAST and the SLOW copy: the inner regions' renderings (one
    /// per copy, numbered apart) and the per-site checks in the inner
    /// loops outside inner regions (the same in both).
    fast: Vec<Insertion>,
    slow: Vec<Insertion>,
}

impl Nest {
    fn in_inner(&self, start: usize, end: usize) -> bool {
        self.inner.iter().any(|&(s, e)| start >= s && end <= e)
    }
}

/// A loop region's loop, as its copies' iterations are written
/// ([`Renderer::iteration`]).
struct LoopText {
    id: NodeId,
    /// The region's number (labels).
    number: usize,
    condition: Option<NodeId>,
    step: Option<NodeId>,
    body: NodeId,
    body_end: usize,
    is_do: bool,
    /// Whether a `continue` of the loop's own is in its body: the copy's
    /// continue label is then written after the body.
    continued: bool,
}

/// How one copy of a loop's iteration is written.
struct Iteration<'a> {
    copy: Version,
    /// Where the body's own `continue`s go.
    continue_label: &'a str,
    /// Where its `break`s go, if not to `break`.
    break_label: Option<&'a str>,
    /// The statements (ending in a jump) run when the condition is false.
    on_false: &'a str,
    /// Whether the condition is tested elsewhere (a counted loop's head
    /// or tail).
    tested: bool,
}

/// FAST iterations of an unrolled loop per decrement of the countdown
/// (`-fsample-unrolled-loops`).
const UNROLL: u32 = 4;

/// The largest loop (in syntax nodes, its header included) whose FAST
/// iterations are unrolled. bc's hot inner loops are 17 to 37; loops of 41
/// to 64 (sqlite3.c has 49) gain nothing measurable on zlib and bc and
/// cost the copies (BENCHMARKS.md, "Sampling: unrolled loops").
const UNROLL_MAX_NODES: usize = 40;

/// The largest counted loop (in syntax nodes, its header included) whose
/// FAST loop also holds the user's loop, run when the loop ends within the
/// countdown: FAST then holds its body twice. zlib's braided CRC loop
/// (five table lookups per iteration) is over 80; sqlite3.c has 39 such
/// loops of its 44 counted ones (the same at 80 and at 200).
const COUNTED_PLAIN_MAX_NODES: usize = 200;

/// Which copy a piece of text goes to.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Version {
    Fast,
    Slow,
    /// Per-site checks on the local countdown, outside the region's copies
    /// (a `for`'s initialisation in a leaf function).
    Local,
    /// Outside the local's scope (a `for`'s initialisation): as if not in
    /// a region.
    Before,
}

impl Renderer<'_> {
    /// The name a named label of the region being rendered takes in
    /// `copy`, if not its own: FAST's labels are `__cbi_fast_NAME`. An
    /// inner region of a nested loop region is rendered into both copies
    /// of it, so that in the nested region's FAST copy its labels take
    /// other names again (`__cbi_nest_NAME` in its SLOW copy,
    /// `__cbi_nest_fast_NAME` in its FAST copy): each of the four copies
    /// of the label is defined once. (A label of the nested region's own
    /// text, outside its inner regions, is `__cbi_fast_NAME` in its FAST
    /// copy, where jumps out of an inner region reach it.)
    fn copy_label(&self, name: &str, copy: Version) -> Option<String> {
        let fast = copy == Version::Fast;
        match (self.in_fast.get().is_some(), fast) {
            (false, false) => None,
            (false, true) => Some(format!("__cbi_fast_{name}")),
            (true, false) => Some(format!("__cbi_nest_{name}")),
            (true, true) => Some(format!("__cbi_nest_fast_{name}")),
        }
    }

    /// The countdown's local for region `number`: the function's own in a
    /// leaf function, else the region's.
    fn local(&self, number: usize) -> String {
        match &self.shared {
            Some(local) => local.clone(),
            None => format!("__cbi_L{number}"),
        }
    }

    /// Whether `region` loads a local countdown of its own and stores it
    /// back when it is left: not with the function's local (which
    /// `return`s write back), nor across calls (the global one is used).
    fn own_local(&self, region: &Region) -> bool {
        self.shared.is_none() && !self.global(region)
    }

    /// Whether `region` takes its event from the global countdown: across
    /// calls, alone in its function, or nested outside a leaf function
    /// (its inner regions load and store their locals inside its copies).
    fn global(&self, region: &Region) -> bool {
        region.across_calls || region.lone || (!region.holes.is_empty() && self.shared.is_none())
    }

    /// What `region` writes back before it is left.
    fn write_back(&self, region: &Region, local: &str) -> String {
        if self.own_local(region) {
            format!("{}; ", self.countdown.store(local))
        } else {
            String::new()
        }
    }

    /// The counted loop whose FAST loop region `region`'s split loop
    /// bounds by its variable, if it has one; `scale`: the region's (a
    /// counted FAST loop takes one event per iteration, scale 1).
    fn counted(&self, region: &Region, scale: u32) -> Option<CountedLoop> {
        let Shape::Loop { node } = region.shape else {
            return None;
        };
        (self.per_region
            && self.split_loops
            && self.counted_loops
            && scale == 1
            && !region.unsplit()
            && !self.leaves_early(node))
        .then(|| CountedLoop::recognise(self.function, self.text, node))
        .flatten()
    }

    /// Per region, the test that makes a `for` loop region's
    /// initialisation (`init`, at `start..end`) one event: when it is an
    /// expression (a declaration's scope would end with the test's block)
    /// with two sites or more, all at scale 1 (with rates each keeps its
    /// own check and scale, which `.debug_site_scales` records).
    fn init_test(&self, init: NodeId, start: usize, end: usize) -> Option<String> {
        if !self.per_region || is_declaration(self.function, init) {
            return None;
        }
        let mut sites = 0;
        for index in self.marks_within(start, end) {
            let mark = &self.marks[index];
            if mark.scale != 1 {
                return None;
            }
            sites += mark.checks;
        }
        (sites >= 2).then(|| match &self.shared {
            Some(local) => self.countdown.region_test(local, 1),
            None => self.countdown.global_region_test(1),
        })
    }

    /// The marks (by index) of the sites whose observations a region's
    /// event decides: those inside it, but a `for`'s initialisation, which
    /// runs once before the loop and keeps its own checks.
    fn region_marks<'s>(&'s self, region: &'s Region) -> impl Iterator<Item = usize> + 's {
        let init = match region.shape {
            Shape::Loop { node } => loop_parts(self.function, node).init.map(|init| {
                let n = self.function.node(init);
                (n.start, n.end)
            }),
            _ => None,
        };
        let in_init = move |index: usize| {
            let node = self.function.node(self.marks[index].node);
            init.is_some_and(|(s, e)| node.start >= s && node.end <= e)
        };
        let in_hole = move |index: usize| {
            let node = self.function.node(self.marks[index].node);
            region
                .holes
                .iter()
                .any(|&(s, e)| node.start >= s && node.end <= e)
        };
        self.marks_within(region.start, region.end)
            .filter(move |&index| !in_init(index) && !in_hole(index))
    }

    /// The marks (by index) of the sites within `start..end`.
    fn marks_within(&self, start: usize, end: usize) -> impl Iterator<Item = usize> + '_ {
        self.marks
            .iter()
            .enumerate()
            .filter_map(move |(index, mark)| {
                let node = self.function.node(mark.node);
                (node.start >= start && node.end <= end).then_some(index)
            })
    }

    /// A region's scale (`-fsampler-rates`): the smallest of its sites',
    /// so that each of them is observed at least as often as it asked; 1
    /// without rates.
    fn region_scale(&self, region: &Region) -> u32 {
        self.region_marks(region)
            .map(|mark| self.marks[mark].scale)
            .min()
            .unwrap_or(1)
    }

    /// Counts rendered region `region` (of `scale`, `counted` or not) in
    /// `stats`, and its marks in `in_regions` (per region).
    fn tally(
        &self,
        region: &Region,
        scale: u32,
        counted: Option<&CountedLoop>,
        stats: &mut RegionStats,
        in_regions: &mut Vec<(usize, u32)>,
    ) {
        if self.per_region {
            in_regions.extend(self.region_marks(region).map(|mark| (mark, scale)));
        }
        stats.warm_loops += usize::from(self.warm(region, scale));
        stats.counted_loops += usize::from(counted.is_some());
        stats.unrolled_loops += usize::from(self.unrolled(region, scale, counted.is_some()));
        stats.counted_plain_loops +=
            usize::from(counted.is_some_and(|loop_| self.counted_plain(region, loop_)));
        match region.shape {
            Shape::Run { .. } => {
                stats.runs += 1;
                stats.runs_across_calls += usize::from(region.across_calls);
            }
            Shape::Loop { .. } => {
                stats.loops += 1;
                stats.loops_across_calls += usize::from(region.across_calls);
            }
            Shape::Expression { .. } => stats.expressions += 1,
            Shape::Declarations => stats.declarations += 1,
        }
        if !matches!(region.shape, Shape::Declarations) {
            // Sites, not checks: an assignment's candidates observed
            // together are one check (`Mark::checks`).
            stats.cloned_sites += self
                .region_marks(region)
                .map(|mark| self.marks[mark].count as usize)
                .sum::<usize>();
        }
    }

    /// For a nested loop region: renders its `inner` regions (with their
    /// insertions `inner_own`, scales and counted loops `plans`) once for
    /// each of its copies, numbered from `next_region`, and holds them with
    /// `holes`, the per-site checks of its inner loops, for
    /// [`Renderer::piece`] to place in each copy.
    fn nest_copies(
        &self,
        region: &Region,
        inner: &[Region],
        inner_own: &[Vec<Insertion>],
        plans: &[(u32, Option<CountedLoop>)],
        holes: &[Insertion],
        next_region: &mut usize,
    ) -> Result<(), &'static str> {
        if region.holes.is_empty() {
            return Ok(());
        }
        let mut copies = [holes.to_vec(), holes.to_vec()];
        for (copy, held) in copies.iter_mut().enumerate() {
            let fast = copy == 0;
            self.in_fast.set(fast.then_some((region.start, region.end)));
            for ((inner, own), (scale, counted)) in inner.iter().zip(inner_own).zip(plans) {
                let rendered = self.render(inner, *next_region, own, *scale, counted.as_ref());
                *next_region += 1;
                match rendered {
                    Ok(text) => held.push(replacement(inner.start, inner.end, text)),
                    Err(reason) => {
                        self.in_fast.set(None);
                        return Err(reason);
                    }
                }
            }
        }
        self.in_fast.set(None);
        let [fast, slow] = copies;
        self.nest.replace(Some(Nest {
            inner: inner.iter().map(|r| (r.start, r.end)).collect(),
            fast,
            slow,
        }));
        Ok(())
    }

    fn render(
        &self,
        region: &Region,
        number: usize,
        own: &[Insertion],
        scale: u32,
        counted: Option<&CountedLoop>,
    ) -> Result<String, &'static str> {
        let local = self.local(number);
        let weight = region.weight;
        // Declared, then assigned: a jump from outside into the slow copy
        // skips no initialisation (-Wjump-misses-init).
        // A region across calls keeps no local: the calls use the global
        // countdown, so its event is taken there too, as a site outside
        // regions takes its own, and there is nothing to store back.
        let load = if self.own_local(region) {
            format!("int {local}; {}; ", self.countdown.load(&local))
        } else {
            String::new()
        };
        // Per site: FAST when no site can fire before the region ends.
        // Per region: this execution is one event, FAST unless sampled.
        let fast = if self.global(region) {
            self.countdown.global_region_test(scale)
        } else if self.per_region {
            self.countdown.region_test(&local, scale)
        } else {
            format!("__builtin_expect({local} >= {weight}, 1)")
        };
        // A region at rate 1 (`-fsampler-rates`) is only its SLOW copy, in
        // a block: no test, no FAST (an `if (0)` would also move gcc's
        // -Wimplicit-fallthrough warnings, which it places by the `if`).
        let slow_only = self.per_region && scale == 0;
        let test = if slow_only {
            "{".to_owned()
        } else {
            format!("if ({fast}) {{")
        };
        let store = self.write_back(region, &local);
        let (start, end) = (region.start, region.end);
        let mut out = String::new();
        match &region.shape {
            Shape::Run { .. } => {
                let _ = write!(out, "{{ {load}{test}");
                let between = (!slow_only).then_some(" } else {");
                self.both(&mut out, region, &local, (start, end), own, between)?;
                // After a final jump the write-back would be dead code,
                // which gcc's -Wimplicit-fallthrough takes for a statement
                // falling through to the next `case`.
                let store = match region.shape {
                    Shape::Run { ends_in_jump: true } => String::new(),
                    _ => store,
                };
                let _ = write!(out, " }} {store}}}");
            }
            Shape::Loop { node } => {
                self.render_loop(
                    &mut out,
                    region,
                    *node,
                    number,
                    &local,
                    (&load, &test, scale),
                    own,
                    slow_only,
                    counted,
                )?;
            }
            Shape::Declarations => {
                // Declarations, so that no statement comes between the
                // user's declarations (-Wdeclaration-after-statement). Each
                // scalar initialiser is cloned on its own, all chosen by
                // one check.
                let flag = format!("__cbi_F{number}");
                if self.own_local(region) {
                    let _ = write!(out, "__extension__ int {}; ", self.countdown.load(&local));
                }
                // `int`, not `__builtin_expect`'s `long` (-Wconversion).
                let fast = if self.per_region {
                    fast
                } else {
                    format!("{local} >= {weight}")
                };
                let _ = write!(out, "__extension__ int {flag} = {fast};");
                let initialisers = self.scalar_initialisers(region);
                let mut insertions: Vec<Insertion> = own
                    .iter()
                    .filter(|i| {
                        !initialisers
                            .iter()
                            .any(|(s, e, _)| i.start >= *s && i.end <= *e)
                    })
                    .cloned()
                    .collect();
                if self.per_region {
                    // The sites not in cloned initialisers observe when the
                    // declarations' one event is sampled.
                    let fired = |_| format!("(!{flag} ? ");
                    for insertion in &mut insertions {
                        insertion.open = rewrite_checks(&insertion.open, &fired);
                        insertion.close = rewrite_checks(&insertion.close, &fired);
                    }
                }
                for (s, e, name) in initialisers {
                    // Each copy assigned to a variable of the declared type:
                    // SLOW's conversion is the user's, FAST's is system text
                    // (-Wconversion sees no new conversion).
                    let mut copies = format!(
                        "__extension__ ({{ __typeof__({name}) __cbi_I; \
                         if (__builtin_expect({flag}, 1)) __cbi_I = ("
                    );
                    self.both(
                        &mut copies,
                        region,
                        &local,
                        (s, e),
                        own,
                        Some("); else __cbi_I = ("),
                    )?;
                    copies.push_str("); __cbi_I; })");
                    insertions.push(replacement(s, e, copies));
                }
                let slow = Version::Slow;
                self.piece(
                    &mut out,
                    region,
                    &local,
                    None,
                    start,
                    end,
                    slow,
                    &insertions,
                )?;
                if self.own_local(region) {
                    let _ = write!(
                        out,
                        " __extension__ __attribute__((__unused__)) int __cbi_W{number} = \
                         ({}, 0);",
                        self.countdown.store(&local)
                    );
                }
            }
            Shape::Expression { use_ } => {
                // A statement expression: the region stays an expression.
                let result = format!("__cbi_R{number}");
                let declare = if self.own_local(region) {
                    format!("int {local}; ")
                } else {
                    String::new()
                };
                let (declare, assign, value) = match use_ {
                    Expression::Condition => (
                        format!("{declare}int {result}; "),
                        format!("{result} = !!("),
                        format!(" {result};"),
                    ),
                    Expression::Discarded => (declare, "(void)(".to_owned(), String::new()),
                };
                let load = if self.own_local(region) {
                    format!("{}; ", self.countdown.load(&local))
                } else {
                    String::new()
                };
                let _ = write!(out, "__extension__ ({{ {declare}{load}{test} {assign}");
                self.both(
                    &mut out,
                    region,
                    &local,
                    (start, end),
                    own,
                    (!slow_only)
                        .then(|| format!("); }} else {{ {assign}"))
                        .as_deref(),
                )?;
                let _ = write!(out, "); }} {store}{value} }})");
            }
        }
        Ok(out)
    }

    /// A lone run (`region`, of `scale`, with insertions `own`) of a
    /// function's whole body with its SLOW copy in a function of its own
    /// (outline.rs): the run's replacement in `F` (the call when its event
    /// is sampled, then FAST), and the insertions around it:
    /// `F__cbi_slow`'s definition before `F`, and `F`'s parameter list and
    /// closing brace as system-header text. The warnings on parameters,
    /// and those placed at the closing brace (unused variables of the
    /// body's block, `-Wreturn-type`), then come once, from `F__cbi_slow`,
    /// whose parameter list and brace are the user's.
    fn render_outlined(
        &self,
        region: &Region,
        own: &[Insertion],
        scale: u32,
        outline: &Outline,
    ) -> Result<(String, [Insertion; 3]), &'static str> {
        let function = self.function;
        let slow_name = format!("{}{SLOW_SUFFIX}", function.name);
        let arguments = outline.arguments.join(", ");
        let call = if function.returns_void {
            format!("{{ {slow_name}({arguments}); return; }}")
        } else {
            format!("return {slow_name}({arguments});")
        };
        // A lone run takes its event from the global countdown: no local.
        let local = "cbi_countdown";
        let (start, end) = (region.start, region.end);
        let mut body = format!("{{ if ({}) {call} {{", global_region_ran_out(scale));
        self.piece(
            &mut body,
            region,
            local,
            None,
            start,
            end,
            Version::Fast,
            own,
        )?;
        body.push_str(" } }");

        let (open, close) = outline.parameters;
        let brace = outline.closing_brace;
        let marker = self
            .map
            .marker_for(function.start, true)
            .ok_or("no line marker")?;
        let head = format!(
            "static __attribute__((__noinline__, __cold__)) {} {slow_name}",
            outline.specifiers
        );
        let mut slow = format!("\n{marker}{head}");
        self.emit(&mut slow, open, close, false, Vec::new())?;
        // The draw is the copy's: `F` keeps only the decrement and the
        // call, small enough for gcc's inlining limits.
        slow.push_str(" { if (__builtin_expect(!cbi_sample(), 0)) {");
        let fast_again = (!outline.reenters).then_some(" } else {");
        if outline.reenters {
            // A draw that declines (a thread's first event) gives back the
            // event `F` took, and `F` takes it again: its FAST copy runs.
            let reentry = if function.returns_void {
                format!("{}({arguments}); return;", function.name)
            } else {
                format!("return {}({arguments});", function.name)
            };
            write!(slow, " {}; {reentry} }} {{", region_undo(local, scale)).unwrap();
        }
        self.both(&mut slow, region, local, (start, end), own, fast_again)?;
        slow.push_str(" }");
        self.emit(&mut slow, brace, brace + 1, false, Vec::new())?;
        slow.push('\n');

        let as_system = |(start, end)| -> Result<Insertion, &'static str> {
            let mut text = String::new();
            self.emit(&mut text, start, end, true, Vec::new())?;
            Ok(replacement(start, end, text))
        };
        // Declared before `F`, which calls it, and defined after `F`, which
        // it may call (a prototype of `F` would keep gcc from warning that
        // it has none, -Wmissing-prototypes): gcc then meets `F`'s
        // declaration first, as in the user's text, and its warnings come
        // in the user's order.
        let mut declaration = format!("\n{marker}{head}");
        self.emit(&mut declaration, open, close, true, Vec::new())?;
        declaration.push_str(";\n");
        let mut closing = as_system((brace, brace + 1))?;
        closing.open.push_str(&slow);
        let around = [
            Insertion::point(function.start, declaration),
            as_system((open, close))?,
            closing,
        ];
        Ok((body, around))
    }

    /// FAST, `between`, then SLOW of `extent`; SLOW alone without
    /// `between`.
    fn both(
        &self,
        out: &mut String,
        region: &Region,
        local: &str,
        (start, end): (usize, usize),
        own: &[Insertion],
        between: Option<&str>,
    ) -> Result<(), &'static str> {
        if let Some(between) = between {
            self.piece(out, region, local, None, start, end, Version::Fast, own)?;
            out.push_str(between);
        }
        self.piece(out, region, local, None, start, end, Version::Slow, own)
    }

    #[allow(clippy::too_many_arguments)]
    fn render_loop(
        &self,
        out: &mut String,
        region: &Region,
        id: NodeId,
        number: usize,
        local: &str,
        (load, test, scale): (&str, &str, u32),
        own: &[Insertion],
        slow_only: bool,
        counted: Option<&CountedLoop>,
    ) -> Result<(), &'static str> {
        let function = self.function;
        let node = function.node(id);
        let parts = loop_parts(function, id);
        let shape = self.loop_text(id, number, &parts)?;
        let exit = self.write_back(region, local);
        let warm = self
            .warm_counters
            .filter(|_| !slow_only && self.warm(region, scale));
        if let Some(counters) = warm {
            // Once the loop has run WARM_EXECUTIONS times in the process,
            // each execution is one event: FAST the plain loop, SLOW the
            // loop observing every iteration. Both are system-header text
            // (the per-iteration copies below keep gcc's warnings), and
            // the loop has no label, `goto` or `return` to rename or to
            // write the local back for. Before, the per-iteration form.
            let counter = format!("{counters}[{number}]");
            let _ = write!(
                out,
                "{{ if (__builtin_expect({}, 1)) {{ {load}{test}",
                warmed(&counter)
            );
            let outer = self.in_fast.get();
            if outer.is_none() {
                self.in_fast.set(Some((region.start, region.end)));
            }
            let whole = self.both(
                out,
                region,
                local,
                (region.start, region.end),
                own,
                Some(" } else {"),
            );
            self.in_fast.set(outer);
            whole?;
            let _ = write!(out, " }} {exit}}} else {{ {} ", count_execution(&counter));
        }
        // `for`'s initialisation runs once, before a region's local is
        // loaded: its sites keep their checks on the global countdown (on
        // the function's local, which is live).
        out.push('{');
        if let Some(init) = parts.init {
            let NodeKind::For { first_semicolon } = node.kind else {
                return Err("loop shape");
            };
            let (start, end) = (
                function.node(init).start,
                function.node(init).end.min(first_semicolon),
            );
            if let Some(test) = self.init_test(init, start, end) {
                // One event for the whole initialisation, taken before the
                // loop's local is loaded (from the function's local in a
                // leaf function, else from the global countdown).
                let _ = write!(out, "if ({test}) {{ ");
                self.piece(out, region, local, None, start, end, Version::Fast, own)?;
                out.push_str("; } else { ");
                self.piece(out, region, local, None, start, end, Version::Slow, own)?;
                out.push_str("; }");
            } else {
                let version = if self.shared.is_some() {
                    Version::Local
                } else {
                    Version::Before
                };
                self.piece(out, region, local, None, start, end, version, own)?;
                out.push(';');
            }
        }
        // The local is loaded outside the loop and tested inside. Per
        // region the loop is split: FAST iterations run in a loop of their
        // own, with no call (gcc can keep the user's loads out of it),
        // left for the draw when the countdown runs out; a draw that does
        // not sample gives the execution back and goes round again.
        let split = self.split_loops && !slow_only && !region.unsplit();
        let break_label = format!("__cbi_b{number}");
        // A counted loop (scale 1, so not `slow_only`) is always split.
        if let Some(counted) = counted {
            // FAST bounded by the loop's variable (counted.rs), its own
            // code compiled as system-header text, like FAST.
            let _ = writeln!(out, " {{ {load}");
            let system = self
                .map
                .marker_for(node.start, true)
                .ok_or("no line marker")?;
            out.push_str(&system);
            // A small loop that ends within the countdown when it starts
            // runs as the user's loop, its condition and bound as written
            // and no decrement in it, so that gcc compiles it as the plain
            // loop: the same events, taken at once. Only on entry, where
            // `v` holds what the initialisation gave it, as in the plain
            // build: a loop of constant bounds then has a constant trip
            // count (zlib's braided CRC, `for (k = 1; k < W; k++)`), which
            // it had not while the loop was also entered after a draw.
            // After a draw the rest runs bounded by the variable
            // (counted.rs), with the same events.
            let plain = if self.counted_plain(region, counted) {
                let mut plain = String::from(" for (;;) {");
                let iteration = Iteration {
                    copy: Version::Fast,
                    continue_label: &format!("__cbi_cp{number}"),
                    break_label: Some(&break_label),
                    on_false: &format!("{exit}goto {break_label};"),
                    tested: false,
                };
                self.iteration(&mut plain, region, local, own, &shape, iteration)?;
                plain.push_str(" }");
                Some(plain)
            } else {
                None
            };
            if let Some(plain) = plain {
                out.push_str(&counted.first_entry(local, &plain));
                out.push('\n');
                out.push_str(&system);
            }
            out.push_str("for (;;) {");
            out.push_str(&counted.head(local, number));
        } else if split {
            let _ = write!(out, " {{ {load}for (;;) {{");
            if self.unrolled(region, scale, false) {
                let ends = (exit.as_str(), break_label.as_str());
                self.unrolled_iterations(out, region, local, own, &shape, ends)?;
            }
            let _ = write!(
                out,
                " while (__builtin_expect({}, 1)) {{",
                region_decrement(local, scale)
            );
        } else {
            let _ = write!(out, " {{ {load}for (;;) {{ {test}");
        }
        let copies: &[Version] = if slow_only {
            &[Version::Slow]
        } else {
            &[Version::Fast, Version::Slow]
        };
        for &copy in copies {
            let label = format!(
                "__cbi_c{}{number}",
                if copy == Version::Fast { 'f' } else { 's' }
            );
            let leave = if split && copy == Version::Fast {
                format!("goto {break_label};")
            } else {
                "break;".to_owned()
            };
            if copy == Version::Slow && split {
                match counted {
                    Some(counted) => out.push_str(&counted.tail(
                        local,
                        number,
                        &exit,
                        &format!("goto {break_label};"),
                    )),
                    None => out.push_str(" }"),
                }
                let _ = write!(
                    out,
                    " if (__builtin_expect(!{}, 0)) {{ {}; continue; }}",
                    self.countdown.draw(local),
                    region_undo(local, scale)
                );
            } else if copy == Version::Slow && !slow_only {
                out.push_str(" } else {");
            }
            let iteration = Iteration {
                copy,
                continue_label: &label,
                break_label: (split && copy == Version::Fast).then_some(break_label.as_str()),
                on_false: &format!("{exit}{leave}"),
                // A counted FAST loop tests its variable in its head or tail.
                tested: copy == Version::Fast && counted.is_some(),
            };
            self.iteration(out, region, local, own, &shape, iteration)?;
        }
        if split {
            let _ = writeln!(out, " }} {break_label}: __attribute__((__unused__)); }} }}");
        } else {
            out.push_str(" } } } }\n");
        }
        if warm.is_some() {
            out.push_str(" } }\n");
        }
        // Back to the line and column where the loop ends.
        let system =
            self.in_fast.get().is_some() || self.map.presumed(region.end).is_some_and(|p| p.system);
        out.push_str(
            &self
                .map
                .marker_for(region.end, system)
                .ok_or("no line marker")?,
        );
        out.push_str(&self.padding(region.end));
        Ok(())
    }

    /// Whether loop region `region` of `scale`, `counted` or not, runs
    /// its FAST iterations [`UNROLL`] to one decrement: a split loop
    /// region at scale 1 that is not counted and can be unrolled.
    fn unrolled(&self, region: &Region, scale: u32, counted: bool) -> bool {
        let Shape::Loop { node } = region.shape else {
            return false;
        };
        self.per_region
            && self.split_loops
            && self.unrolled_loops
            && scale == 1
            && !region.unsplit()
            && !counted
            && self.unrollable(node)
    }

    /// Whether loop region `region` of `scale` runs whole once warm
    /// (`-fsample-warm-loops`): at scale 1, an innermost loop (no holes,
    /// no weighty call) of at most [`WHOLE_LOOP_NODES`] nodes without
    /// calls (but `__builtin_`s), named labels, `goto`s or `return`s, so
    /// that its two whole copies need no renamed label and no write-back.
    fn warm(&self, region: &Region, scale: u32) -> bool {
        let Shape::Loop { node } = region.shape else {
            return false;
        };
        if self.warm_counters.is_none() || scale != 1 || region.unsplit() {
            return false;
        }
        let function = self.function;
        !self.calls[node]
            && self.size[node] <= WHOLE_LOOP_NODES
            && !self.named_label[node]
            && !subtree(function, node).any(|n| {
                matches!(
                    function.node(n).kind,
                    NodeKind::Jump(Jump::Goto(_)) | NodeKind::Return
                )
            })
    }

    /// Whether something but its condition can end loop `id`: a `break`
    /// of its own, a `return` or a `goto`. Such a loop is not counted: it
    /// often ends after an iteration or two (a search, a comparison), and
    /// the counted head (ten instructions or so on entry) then costs more
    /// than the test per iteration it saves (`vdbeSorterCompareInt`'s
    /// byte comparison: the sqlite3 shell −0.8% instructions uncounted,
    /// zlib and bc, whose counted loops all run to their condition,
    /// unchanged).
    fn leaves_early(&self, id: NodeId) -> bool {
        let function = self.function;
        subtree(function, id).any(|n| match function.node(n).kind {
            NodeKind::Jump(Jump::Break) => jump_target(function, n, true) == Some(id),
            NodeKind::Jump(Jump::Goto(_)) | NodeKind::Return => true,
            _ => false,
        })
    }

    /// Whether counted loop region `region` (loop `counted`) also holds
    /// the user's loop in FAST (`-fsample-counted-plain-loops`): a `for`
    /// loop of at most [`COUNTED_PLAIN_MAX_NODES`] nodes whose iteration
    /// can be written twice.
    fn counted_plain(&self, region: &Region, counted: &CountedLoop) -> bool {
        let Shape::Loop { node } = region.shape else {
            return false;
        };
        self.counted_plain_loops
            && counted.events_left().is_some()
            && self.copyable(node, COUNTED_PLAIN_MAX_NODES, true)
    }

    /// Whether loop `id`'s FAST iterations can run [`UNROLL`] to one
    /// decrement: it is small (its copies multiply gcc's work), and
    /// nothing leaves it but its condition (no `break`, `return` or
    /// `goto`, whose paths would each have to give back the iterations
    /// not run; a `continue` of its own goes to the next copy) and no
    /// label would be defined twice.
    fn unrollable(&self, id: NodeId) -> bool {
        self.copyable(id, UNROLL_MAX_NODES, false)
    }

    /// Whether loop `id` has fewer than `max_nodes` nodes and its FAST
    /// iteration can be written more than once: no jump but its own
    /// `continue`s, no `return`, no named label, and (`innermost`) no loop
    /// inside.
    fn copyable(&self, id: NodeId, max_nodes: usize, innermost: bool) -> bool {
        let function = self.function;
        // Asked for the stats and for the render: a walk of at most
        // max_nodes + 1 nodes, however big the loop.
        for (size, n) in subtree(function, id).enumerate() {
            if size == max_nodes {
                return false;
            }
            match function.node(n).kind {
                NodeKind::Jump(Jump::Continue) if self.continue_target(n) == Some(id) => {}
                NodeKind::Jump(_) | NodeKind::Return | NodeKind::Labelled(Label::Named(_)) => {
                    return false;
                }
                NodeKind::For { .. } | NodeKind::While | NodeKind::Do if innermost && n != id => {
                    return false;
                }
                _ => {}
            }
        }
        true
    }

    /// The FAST loop that runs [`UNROLL`] iterations of split loop region
    /// `region` (loop `shape`, scale 1) to one decrement of `local`, while
    /// the countdown lasts that long; then the decrement is given back for
    /// the single-iteration FAST loop that follows. Iteration `j` of a
    /// round that finds the condition false has taken `j` events: it gives
    /// back the rest before it leaves (`exit`, then to `break_label`, as
    /// the split loop's FAST iterations leave). Which iterations are
    /// sampled is what one decrement per iteration samples.
    fn unrolled_iterations(
        &self,
        out: &mut String,
        region: &Region,
        local: &str,
        own: &[Insertion],
        shape: &LoopText,
        (exit, break_label): (&str, &str),
    ) -> Result<(), &'static str> {
        let _ = write!(
            out,
            " while (__builtin_expect(({local} -= {UNROLL}) >= 0, 1)) {{"
        );
        for j in 1..=UNROLL {
            let give_back = match UNROLL - j {
                0 => String::new(),
                rest => format!("{local} += {rest}; "),
            };
            let iteration = Iteration {
                copy: Version::Fast,
                continue_label: &format!("__cbi_cu{}_{j}", shape.number),
                break_label: Some(break_label),
                on_false: &format!("{give_back}{exit}goto {break_label};"),
                tested: false,
            };
            self.iteration(out, region, local, own, shape, iteration)?;
        }
        let _ = write!(out, " }} {local} += {UNROLL};");
        Ok(())
    }

    /// What [`Renderer::iteration`] needs of loop `id` (`parts`) of
    /// region `number`, found once for all its copies.
    fn loop_text(
        &self,
        id: NodeId,
        number: usize,
        parts: &LoopParts,
    ) -> Result<LoopText, &'static str> {
        let function = self.function;
        let body = parts.body.ok_or("loop without a body")?;
        Ok(LoopText {
            id,
            number,
            condition: parts.condition,
            step: parts.step,
            body,
            body_end: statement_end(function, self.text, body).ok_or("statement end not found")?,
            is_do: matches!(function.node(id).kind, NodeKind::Do),
            continued: subtree(function, body).any(|n| {
                matches!(function.node(n).kind, NodeKind::Jump(Jump::Continue))
                    && self.continue_target(n) == Some(id)
            }),
        })
    }

    /// One iteration of loop `shape` in `iteration.copy`: its condition
    /// (unless `tested` elsewhere), which runs `on_false` when false, its
    /// body, and its step.
    fn iteration(
        &self,
        out: &mut String,
        region: &Region,
        local: &str,
        own: &[Insertion],
        shape: &LoopText,
        iteration: Iteration<'_>,
    ) -> Result<(), &'static str> {
        let function = self.function;
        let copy = iteration.copy;
        let condition = |out: &mut String| -> Result<(), &'static str> {
            if let (Some(condition), false) = (shape.condition, iteration.tested) {
                let c = function.node(condition);
                out.push_str(" if (!(");
                self.piece(out, region, local, None, c.start, c.end, copy, own)?;
                let _ = write!(out, ")) {{ {} }}", iteration.on_false);
            }
            Ok(())
        };
        if !shape.is_do {
            condition(out)?;
        }
        out.push(' ');
        let looping = Some(Looping {
            node: shape.id,
            continue_label: iteration.continue_label,
            break_label: iteration.break_label,
        });
        let b = function.node(shape.body);
        self.piece(
            out,
            region,
            local,
            looping,
            b.start,
            shape.body_end,
            copy,
            own,
        )?;
        if shape.continued {
            let _ = write!(out, " {}: ;", iteration.continue_label);
        }
        if let Some(step) = shape.step {
            let s = function.node(step);
            out.push_str(" (void)(");
            self.piece(out, region, local, None, s.start, s.end, copy, own)?;
            out.push_str(");");
        }
        if shape.is_do {
            condition(out)?;
        }
        Ok(())
    }

    /// The extents of the initialisers of scalar variables declared in
    /// `region` that hold sites, with the variables' names: expressions
    /// that can be cloned into `(flag ? (FAST) : (SLOW))`.
    fn scalar_initialisers(&self, region: &Region) -> Vec<(usize, usize, String)> {
        let function = self.function;
        let mut found: Vec<(usize, usize, String)> = Vec::new();
        for node in &function.nodes {
            let NodeKind::Decl {
                initialised: true,
                key,
            } = node.kind
            else {
                continue;
            };
            // The copies are assigned to a variable of the declared type,
            // which must not be `const`.
            let Some(variable) = function
                .locals
                .iter()
                .find(|v| v.key == key && !v.ty.is_const && !v.ty.is_volatile)
            else {
                continue;
            };
            if node.start < region.start
                || node.end > region.end
                || node
                    .ty
                    .as_ref()
                    .is_none_or(|ty| ty.class == crate::frontend::TypeClass::Other)
            {
                continue;
            }
            let Some(init) = node
                .children
                .iter()
                .map(|&c| function.node(c))
                .rfind(|c| c.evaluated)
            else {
                continue;
            };
            let braced = self.text.get(init.start) == Some(&b'{');
            let marked = self.marks.iter().any(|m| {
                let n = function.node(m.node);
                n.start >= init.start && n.end <= init.end
            });
            // Pre-order: an initialiser inside another one (in a statement
            // expression) is cloned with it.
            let nested = found.last().is_some_and(|(_, end, _)| init.start < *end);
            if marked && !braced && !nested {
                found.push((init.start, init.end, variable.name.clone()));
            }
        }
        found
    }

    fn continue_target(&self, id: NodeId) -> Option<NodeId> {
        jump_target(self.function, id, false)
    }

    /// Renders `start..end` of `region` as `copy` into `out`, after a line
    /// marker that puts it at its own line and column. `looping` names
    /// the region's loop and the labels its jumps go to.
    #[allow(clippy::too_many_arguments)]
    fn piece(
        &self,
        out: &mut String,
        region: &Region,
        local: &str,
        looping: Option<Looping<'_>>,
        start: usize,
        end: usize,
        copy: Version,
        own: &[Insertion],
    ) -> Result<(), &'static str> {
        let function = self.function;
        let text = self.text;
        // Inside a nested region's FAST copy, an inner region's copies
        // are all FAST text.
        let forced = copy == Version::Fast || self.in_fast.get().is_some();
        let system = forced || self.map.presumed(start).is_some_and(|p| p.system);
        let nest = self.nest.borrow();
        let nest = nest.as_ref();
        let in_inner = |s: usize, e: usize| nest.is_some_and(|n| n.in_inner(s, e));
        let mut insertions: Vec<Insertion> = Vec::new();
        if forced {
            // Markers inside stay system-header text (but those an inner
            // region's rendering replaces).
            for (newline, marker_system) in self.map.markers_between(start, end) {
                if !marker_system && !in_inner(newline, newline) {
                    insertions.push(Insertion::point(newline, " 3".to_owned()));
                }
            }
        }
        if copy == Version::Before {
            insertions.extend(
                own.iter()
                    .filter(|i| i.start >= start && i.end <= end)
                    .cloned(),
            );
            return self.emit(out, start, end, system, insertions);
        }
        if let Some(nest) = nest {
            let held = if copy == Version::Fast {
                &nest.fast
            } else {
                &nest.slow
            };
            insertions.extend(
                held.iter()
                    .filter(|i| i.start >= start && i.end <= end)
                    .cloned(),
            );
        }
        if copy == Version::Slow && self.per_region {
            // Runs only when the region's event is sampled: every site
            // observes, also inside a `return`.
            for insertion in own {
                if insertion.start >= start && insertion.end <= end {
                    let mut insertion = insertion.clone();
                    let observed = |_| OBSERVED.to_owned();
                    insertion.open = rewrite_checks(&insertion.open, &observed);
                    insertion.close = rewrite_checks(&insertion.close, &observed);
                    insertions.push(insertion);
                }
            }
        } else if matches!(copy, Version::Slow | Version::Local) {
            let localiser = Localiser::new(local, &self.returns, self.countdown);
            for insertion in own {
                if insertion.start >= start && insertion.end <= end {
                    let mut insertion = insertion.clone();
                    localiser.localise(&mut insertion);
                    insertions.push(insertion);
                }
            }
        } else {
            // The site code becomes decrements of the local countdown (of
            // the global one inside a `return`, which writes back first).
            // An initialiser keeps its variable's type: `p = (L -= 1, 0)`
            // would no longer be a null pointer constant.
            type Decrement<'n> = (u32, bool, Option<&'n str>);
            let mut decrements: BTreeMap<(usize, usize, bool), Decrement<'_>> = BTreeMap::new();
            // Per region, FAST is the original code.
            let marks = if self.per_region { &[][..] } else { self.marks };
            for mark in marks {
                let node = function.node(mark.node);
                if node.start < start || node.end > end {
                    continue;
                }
                let in_return = in_return(&self.returns, node.start, node.end);
                let initialised = self.initialised_variable(mark.node);
                let entry = decrements
                    .entry((node.start, node.end, mark.lvalue))
                    .or_insert((0, in_return, initialised));
                entry.0 += mark.count;
            }
            for ((s, e, lvalue), (count, in_return, initialised)) in decrements {
                let counter = if in_return { "cbi_countdown" } else { local };
                let (open, close) = match (lvalue, initialised) {
                    (true, _) => (format!("(*({counter} -= {count}, &("), ")))".to_owned()),
                    (false, Some(name)) => (
                        format!("((__typeof__({name}))({counter} -= {count}, "),
                        "))".to_owned(),
                    ),
                    (false, None) => (format!("({counter} -= {count}, "), ")".to_owned()),
                };
                insertions.push(Insertion::wrap(s, e, 9, open, close));
            }
        }
        // Jumps and labels.
        for (id, node) in function.nodes.iter().enumerate() {
            // An inner region's rendering has its own.
            if node.start < start || node.end > end || in_inner(node.start, node.end) {
                continue;
            }
            let inside = |other: NodeId| {
                let n = function.node(other);
                n.start >= region.start && n.end <= region.end
            };
            // With the function's local, only `return` leaves its scope.
            let own_local = self.own_local(region);
            match &node.kind {
                NodeKind::Jump(Jump::Continue)
                    if looping.is_some_and(|l| self.continue_target(id) == Some(l.node)) =>
                {
                    let label = looping.map(|l| l.continue_label).unwrap_or_default();
                    insertions.push(replacement(node.start, node.end, format!("goto {label}")));
                }
                NodeKind::Jump(Jump::Break)
                    if looping.is_some_and(|l| {
                        l.break_label.is_some() && jump_target(function, id, true) == Some(l.node)
                    }) =>
                {
                    // Out of the split loop's FAST loop and the loop around
                    // it: one statement, the local stored first.
                    let label = looping.and_then(|l| l.break_label).unwrap_or_default();
                    let stop =
                        statement_end(function, text, id).ok_or("statement end not found")?;
                    let store = self.write_back(region, local);
                    insertions.push(replacement(
                        node.start,
                        stop,
                        format!("{{ {store}goto {label}; }}"),
                    ));
                }
                NodeKind::Jump(jump) => {
                    let leaves = match jump {
                        Jump::Break => jump_target(function, id, true)
                            .is_none_or(|t| !inside(t) || looping.is_some_and(|l| l.node == t)),
                        Jump::Continue => self.continue_target(id).is_none_or(|t| !inside(t)),
                        Jump::Goto(name) => {
                            let to = |insertions: &mut Vec<Insertion>, renamed: String| {
                                let spelled = &text[node.start..node.end];
                                if !spelled.ends_with(name.as_bytes()) {
                                    return Err("goto spelling");
                                }
                                insertions.push(replacement(
                                    node.end - name.len(),
                                    node.end,
                                    renamed,
                                ));
                                Ok(())
                            };
                            let label = self.labels.get(name.as_str()).copied();
                            let in_fast_copy = |label: NodeId| {
                                let n = function.node(label);
                                self.in_fast
                                    .get()
                                    .is_some_and(|(s, e)| n.start >= s && n.end <= e)
                            };
                            match label {
                                // Inside: each copy jumps to its own label.
                                Some(label) if inside(label) => {
                                    if let Some(renamed) = self.copy_label(name, copy) {
                                        to(&mut insertions, renamed)?;
                                    }
                                    false
                                }
                                // Out of an inner region, to a label of the
                                // nested region's FAST copy it is rendered in.
                                Some(label) if in_fast_copy(label) => {
                                    to(&mut insertions, format!("__cbi_fast_{name}"))?;
                                    true
                                }
                                _ => true,
                            }
                        }
                        Jump::Computed => return Err("computed goto"),
                    };
                    if leaves && own_local {
                        insertions.push(
                            store_before(function, text, id, local, self.countdown)
                                .ok_or("statement end not found")?,
                        );
                    }
                }
                NodeKind::Return if !self.global(region) => {
                    insertions.push(
                        store_before(function, text, id, local, self.countdown)
                            .ok_or("statement end not found")?,
                    );
                }
                NodeKind::Labelled(Label::Named(name)) => {
                    let Some(renamed) = self.copy_label(name, copy) else {
                        continue;
                    };
                    if !text[node.start..].starts_with(name.as_bytes()) {
                        return Err("label spelling");
                    }
                    // The copy's label is marked unused: a label reached
                    // only from outside the region is reached at the slow
                    // copy's (jq's regparse.c warned "defined but not used").
                    let colon = skip_trivia(text, node.start + name.len());
                    if text.get(colon) != Some(&b':') {
                        return Err("label spelling");
                    }
                    insertions.push(replacement(node.start, node.start + name.len(), renamed));
                    insertions.push(replacement(
                        colon + 1,
                        colon + 1,
                        " __attribute__((__unused__))".to_owned(),
                    ));
                }
                _ => {}
            }
        }
        self.emit(out, start, end, system, insertions)
    }

    /// `text[start..end]` with `insertions`, after a line marker that puts
    /// it at its own line and column.
    fn emit(
        &self,
        out: &mut String,
        start: usize,
        end: usize,
        system: bool,
        insertions: Vec<Insertion>,
    ) -> Result<(), &'static str> {
        super::emit(out, self.text, self.map, start, end, system, insertions)
    }

    /// The variable that expression `id` initialises, if it is an
    /// initialiser.
    fn initialised_variable(&self, id: NodeId) -> Option<&str> {
        let function = self.function;
        let parent = function.node(function.node(id).parent?);
        let NodeKind::Decl { key, .. } = parent.kind else {
            return None;
        };
        function
            .locals
            .iter()
            .find(|v| v.key == key)
            .map(|v| v.name.as_str())
    }

    /// Blanks as wide as the text before `offset` on its line (tabs kept),
    /// so that columns stay the user's.
    fn padding(&self, offset: usize) -> String {
        super::padding(self.text, self.map, offset)
    }
}

pub(super) fn replacement(start: usize, end: usize, text: String) -> Insertion {
    Insertion {
        start,
        end,
        rank: 0,
        open: text,
        close: String::new(),
        replace: true,
        prologue: false,
    }
}

/// Whether statement `id` cannot complete normally: a `break`, `continue`,
/// `goto` or `return`, a block whose last statement cannot, a labelled such
/// statement, an `if` whose branches both cannot (jq's `case JUMP: { ...
/// break; }`: the countdown written back after such a run would be a
/// statement gcc calls a fall-through into the next case).
fn never_falls_through(function: &Function, id: NodeId) -> bool {
    let node = function.node(id);
    match &node.kind {
        NodeKind::Jump(Jump::Break | Jump::Continue | Jump::Goto(_)) | NodeKind::Return => true,
        NodeKind::Compound | NodeKind::Labelled(_) => node
            .children
            .last()
            .is_some_and(|&last| never_falls_through(function, last)),
        NodeKind::If => {
            node.children.len() == 3
                && node.children[1..]
                    .iter()
                    .all(|&branch| never_falls_through(function, branch))
        }
        _ => false,
    }
}
