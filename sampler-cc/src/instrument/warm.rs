//! `-fsample-warm-functions`: a function called often enough in the
//! process runs its plain body, one event per call.
//!
//! Per region, a hot function still pays an event per region execution
//! (per loop iteration) and runs FAST copies that gcc optimises worse than
//! the user's code: spilled registers, callers that no longer inline it.
//! Once warm, the function is the plain body behind one test:
//!
//! ```c
//! static __attribute__((__noinline__)) T F__cbi_slow(PARAMS);
//! T F(PARAMS) {
//!     if (__builtin_expect(--cbi_countdown >= 0, 1)
//!         && __builtin_expect(C[k] >= WARM_EXECUTIONS, 1)) { BODY }
//!     else return F__cbi_slow(ARGS);
//! }
//! static __attribute__((__noinline__)) T F__cbi_slow(PARAMS) {
//!     int __cbi_forced = 0;
//!     if (cbi_countdown < 0 && C[k] >= WARM_EXECUTIONS) __cbi_forced = cbi_sample();
//!     else { ++cbi_countdown; C[k]++; }
//!     { REGIONS }
//! }
//! ```
//!
//! `F` takes an event and, while the countdown holds and the function is
//! warm, runs its plain body; with one call out of it, `F` stays near the
//! plain function's size for gcc's inliner. Otherwise `F__cbi_slow`
//! decides from the countdown's sign (the counter is read once either
//! way, so a thread that warms the function meanwhile changes nothing):
//! run out and warm, the call's event is drawn; cold, the call gives the
//! event back and counts itself. Either way it runs `REGIONS`, the body
//! as sampler-cc renders it without the flag (regions, their FAST and
//! SLOW copies, per-site checks), in a block of its own so that its
//! declarations still come first, closed where the user's body is. A
//! sampled call runs it with `__cbi_forced` set (regions.rs, `Countdown`):
//! every region takes its SLOW copy and every site observes, as a site at
//! rate 1 does, and no region touches the countdown, so the calls it
//! makes take their own events from the fresh countdown `cbi_sample`
//! drew. It costs the regions' FAST paths nothing where they count
//! down a local (it is read when the local is loaded, stored and drawn),
//! and a test per execution where they count down the global countdown
//! (regions across calls). A declined draw runs `REGIONS` as usual. For
//! its first [`WARM_EXECUTIONS`](crate::options::WARM_EXECUTIONS) calls
//! in the process the function so samples exactly as without the flag,
//! event for event; after them a call is one event, and the thread's
//! countdown is left to the calls it makes, which take their own events as
//! usual. (A sampled call used to run a third copy, `F__cbi_whole`, the
//! body with every site observed: 75% of the text this form added to
//! sqlite3.c. The resolver still reads that name, for older builds.)
//!
//! So each site keeps probability 1/sparsity per execution (unbiased
//! counts); once warm, the observations of one call are decided together.
//! A function called fewer than `WARM_EXECUTIONS` times keeps per-region
//! sampling, and one called more is observed in nearly every run either
//! way, as for warm loops (regions.rs). With a rates file sites have other
//! scales than the call's event, and functions keep per-region sampling.
//!
//! Diagnostics: `F`'s parameter list, its dispatch and its copy of the
//! body are system-header text (but `F`'s opening brace,
//! where gcc checks what it says of the definition,
//! `-Wold-style-definition`); `F__cbi_slow`'s parameter list and body are
//! the user's (its FAST copies system-header text, as without the flag),
//! so gcc's warnings come once, from it. The copies'
//! `__func__` and its kin spell `F`'s name. A backtrace through the copy
//! shows `F__cbi_slow`, which the resolver reads as `F`.
//!
//! Left as they are: what outline.rs leaves (main, variadic, attributed
//! and recursive functions, ...), functions that call a function declared
//! implicitly (gcc warns at the first call only, which would be the plain
//! body's, in system-header text), functions with static
//! locals that cannot be duplicated (each copy would have its own),
//! functions whose sites reach outside the body or begin or end on a
//! `__func__`, and lone runs and functions of one site and no region,
//! which take one event per call already (regions.rs). K&R definitions
//! are taken: the copies repeat the parameters' declarations and are
//! declared without a prototype.

use std::fmt::Write as _;

use crate::frontend::{Function, NodeKind, Storage};
use crate::preprocessed::{LineMap, tokens};

use super::outline::{Declarators, FUNCTION_NAMES, Outline, SLOW_SUFFIX, outline};
use super::regions::{FORCED, count_execution, duplicable_static, replacement, warmed};
use super::{Insertion, emit, padding, rewrite_checks, sampled_check};

/// [`sampled_check`] of `scale` in the per-region copy: a sampled call
/// (the flag [`FORCED`] set) observes without taking an event. The flag
/// is read through an empty `asm` that gcc cannot see through: threading
/// jumps on it would copy the user's code between two such checks, and
/// gcc would warn twice on what it copied (`-Wmaybe-uninitialized`; seen
/// on the drop-in test's `warn.c`). The regions' tests read it plainly:
/// there gcc may thread the flag out of their FAST paths.
fn forced_check(scale: u32) -> String {
    let check = sampled_check(scale);
    match check.strip_prefix('(').and_then(|c| c.strip_suffix(" ? ")) {
        Some(condition) if scale > 0 => format!(
            "(__builtin_expect(__extension__ ({{ int __cbi_f = {FORCED}; \
             __asm__(\"\" : \"+r\"(__cbi_f)); __cbi_f; }}), 0) || ({condition}) ? "
        ),
        _ => check,
    }
}

/// Whether `function`, whose sites' own insertions are `sites`, can take
/// the warm form, as far as can be told before its regions are rendered
/// (which [`warm_function`] then checks with them), or why not; its
/// outline when it can.
pub(super) fn eligible(
    function: &Function,
    text: &[u8],
    map: &LineMap,
    sites: &[Insertion],
) -> Result<Outline, &'static str> {
    let outline = outline(function, text, map, Declarators::KAndR)?;
    if function
        .locals
        .iter()
        .any(|v| v.storage == Storage::StaticLocal && !duplicable_static(function, text, v))
    {
        return Err("static local");
    }
    // gcc says "implicit declaration" at the first call only, which would
    // be the plain body's, in system-header text.
    if (function.nodes.iter())
        .any(|node| matches!(&node.kind, NodeKind::Call(call) if call.implicit))
    {
        return Err("implicit declaration");
    }
    if sites.is_empty() {
        return Err("no sites");
    }
    fits(function, &outline, sites)?;
    Ok(outline)
}

/// Whether `insertions` (a function's sites, or its rendering) lie in the
/// body of `function` (outline `outline`), none beginning or ending on a
/// `__func__`, or why not.
fn fits(
    function: &Function,
    outline: &Outline,
    insertions: &[Insertion],
) -> Result<(), &'static str> {
    let body = function.node(function.body);
    if insertions
        .iter()
        .any(|i| i.start <= body.start || i.end >= body.end)
    {
        return Err("sites outside the body");
    }
    // A site's code that begins or ends on `__func__` would meet its
    // replacement at the same offset.
    let touches = |&name: &(usize, usize)| insertions.iter().any(|i| !i.replace && i.meets(name));
    if outline.function_names.iter().any(touches) {
        return Err("a site at __func__");
    }
    Ok(())
}

/// Rewrites `function`'s `rendered` insertions (its sites and regions)
/// into the warm form above, counting its calls in `counter`; `outline`:
/// what [`eligible`] found of it. Leaves `rendered` as it is and says why
/// when it cannot.
pub(super) fn warm_function(
    function: &Function,
    text: &[u8],
    map: &LineMap,
    outline: Outline,
    rendered: &mut Vec<Insertion>,
    counter: &str,
) -> Result<(), &'static str> {
    fits(function, &outline, rendered)?;
    let body = function.node(function.body);
    let name = &function.name;
    let quoted = format!("\"{name}\"");
    // The copies name their function as `F` does.
    let named = |insertions: Vec<Insertion>| -> Vec<Insertion> {
        let mut out: Vec<Insertion> = insertions
            .iter()
            .map(|i| Insertion {
                open: spell_name(&i.open, &quoted),
                close: spell_name(&i.close, &quoted),
                ..i.clone()
            })
            .collect();
        for &(start, end) in &outline.function_names {
            // Inside a replacement, its text was rewritten above.
            if !insertions
                .iter()
                .any(|i| i.replace && start >= i.start && end <= i.end)
            {
                out.push(replacement(start, end, quoted.clone()));
            }
        }
        out
    };
    // The user's markers inside the body, made system-header ones.
    let as_system = || -> Vec<Insertion> {
        map.markers_between(body.start, body.end)
            .into_iter()
            .filter(|&(_, system)| !system)
            .map(|(newline, _)| Insertion::point(newline, " 3".to_owned()))
            .collect()
    };
    let (open, close) = outline.parameters;
    // A K&R definition's copies repeat its declarations, and are declared
    // without a prototype (their calls promote the arguments as `F`'s do).
    let close = outline.declarations_end.unwrap_or(close);
    let system_marker = |at: usize| map.marker_for(at, true).ok_or("no line marker");
    // The parameter list (and a K&R definition's declarations), and the
    // body with `insertions`, each as system-header text or the user's.
    let parameters =
        |out: &mut String, system: bool| emit(out, text, map, open, close, system, Vec::new());
    let body_copy = |out: &mut String, system: bool, insertions: Vec<Insertion>| {
        emit(out, text, map, body.start, body.end, system, insertions)
    };
    let slow_name = format!("{name}{SLOW_SUFFIX}");
    let slow_head = format!(
        "static __attribute__((__noinline__)) {} {slow_name}",
        outline.specifiers
    );

    // Declared before `F`, which calls them, and defined after it.
    let mut declarations = String::new();
    let _ = write!(
        declarations,
        "\n{}{slow_head}",
        system_marker(function.start)?
    );
    if outline.declarations_end.is_some() {
        declarations.push_str("()");
    } else {
        parameters(&mut declarations, true)?;
    }
    declarations.push_str(";\n");

    // `F`: the dispatch and the plain body, system-header text.
    let arguments = outline.arguments.join(", ");
    let call = |callee: &str| {
        if function.returns_void {
            format!("{{ {callee}({arguments}); return; }}")
        } else {
            format!("return {callee}({arguments});")
        }
    };
    // The body's brace stays the user's: gcc checks where it stands for
    // what it says of the definition (`-Wold-style-definition`).
    let mut dispatch = format!(
        "\n{}{}{{\n{}{} if (__builtin_expect(--cbi_countdown >= 0, 1) \
         && __builtin_expect({}, 1))",
        map.marker_for(body.start, false).ok_or("no line marker")?,
        padding(text, map, body.start),
        system_marker(body.start)?,
        padding(text, map, body.start + 1),
        warmed(counter),
    );
    body_copy(&mut dispatch, true, as_system())?;
    let _ = write!(dispatch, " else {} }}", call(&slow_name));

    // `F__cbi_slow`: the rest of the dispatch, then the per-region
    // rendering, the user's text, in a block of its own (so that its
    // declarations still come first), closed where the user's is.
    let _ = write!(dispatch, "\n{}{slow_head}", system_marker(function.start)?);
    parameters(&mut dispatch, false)?;
    // `F` took an event when its countdown was not negative, or when it
    // ran out (and `F` did not read the counter then): a warm call draws,
    // and a sampled one forces every region; a cold one gives the event
    // back.
    let _ = write!(
        dispatch,
        "\n{}{{ int {FORCED} = 0; if (__builtin_expect(cbi_countdown < 0, 0) && {}) \
         {FORCED} = cbi_sample(); else {{ ++cbi_countdown; {} }}",
        system_marker(body.start)?,
        warmed(counter),
        count_execution(counter)
    );
    // The sites outside regions (and in `return`s of a leaf function)
    // check the global countdown: forced, they observe without it.
    let forced: Vec<Insertion> = std::mem::take(rendered)
        .into_iter()
        .map(|i| Insertion {
            open: rewrite_checks(&i.open, &forced_check),
            close: rewrite_checks(&i.close, &forced_check),
            ..i
        })
        .collect();
    body_copy(&mut dispatch, false, named(forced))?;
    let brace = body.end - 1;
    let _ = write!(
        dispatch,
        "\n{}{}}}",
        map.marker_for(brace, false).ok_or("no line marker")?,
        padding(text, map, brace)
    );

    dispatch.push('\n');

    let mut system_parameters = String::new();
    parameters(&mut system_parameters, true)?;
    *rendered = vec![
        Insertion::point(function.start, declarations),
        replacement(open, close, system_parameters),
        replacement(body.start, body.end, dispatch),
    ];
    Ok(())
}

/// `code` (sampler-cc's own text, with copies of the user's) with
/// `__func__` and its kin spelled `name`. Tokens, not bytes: the user's
/// literals and comments are left as they are.
fn spell_name(code: &str, name: &str) -> String {
    let bytes = code.as_bytes();
    let mut out = String::with_capacity(code.len());
    let mut copied = 0;
    for (start, end) in tokens(bytes, 0, bytes.len()) {
        if FUNCTION_NAMES.contains(&&code[start..end]) {
            out.push_str(&code[copied..start]);
            out.push_str(name);
            copied = end;
        }
    }
    out.push_str(&code[copied..]);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn copies_spell_their_function_s_name() {
        assert_eq!(
            spell_name("printf(\"%s\", __func__, __PRETTY_FUNCTION__);", "\"f\""),
            "printf(\"%s\", \"f\", \"f\");"
        );
        let code = "puts(\"__func__\"); my__func__++; /* __FUNCTION__ */";
        assert_eq!(spell_name(code, "\"f\""), code);
    }
}
