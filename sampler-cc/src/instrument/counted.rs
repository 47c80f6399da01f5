//! Counted loops: the FAST loop of a split loop region bounded by the
//! loop's own induction variable (`-fsample-counted-loops`, the default).
//!
//! A split loop's FAST loop tests the countdown on every iteration, next
//! to the loop's own condition: two exits, so gcc can neither eliminate
//! the induction variable nor vectorise (bc's `_one_mult`: 16 instructions
//! per iteration plain, 22 split). When the loop counts a local integer
//! `v` by one towards a bound that does not change in the loop, the
//! number of iterations left is known on entry. FAST then runs
//! `min(left, countdown)` iterations in a loop whose only test is `v`
//! against a limit computed once, and the countdown is decremented in it
//! without a test:
//!
//! ```c
//! if (__builtin_expect(L > 0, 1)) {
//!     __typeof__(v) M; int A;
//!     A = <the loop ends within L events>; M = A ? (b) : <v moved by L>;
//!     while (v < M) { --L; BODY STEP }      /* the shape's loop */
//!     if (A) { --L; goto B; }               /* the final test's event */
//! }
//! --L;  /* the event that ran out: the draw follows */
//! ```
//!
//! The events are the split loop's: one per evaluation of the condition
//! (with the body it admits), in the same order, so under one seed the two
//! forms sample the same iterations (a test checks it). Only the FAST
//! code differs.
//!
//! The limit `M` is computed at run time, so gcc no longer sees the
//! loop's bound as the user wrote it, and each iteration still decrements
//! `L`; a short loop pays the head's work on every execution (zlib's
//! braided CRC, `for (k = 1; k < W; k++)`, 7 iterations: about 46
//! instructions per execution more than plain). With
//! `-fsample-counted-plain-loops` (the default), a small `for` loop whose
//! FAST iteration can be written twice (`Renderer::counted_plain` in
//! regions.rs) also holds the user's loop,
//! run when the loop ends within the countdown, its events taken at once:
//!
//! ```c
//!     A = <the loop ends within L events>;
//!     if (A) { L -= <iterations left> + 1;
//!              for (;;) { if (!(v < b)) { <write-back> goto B; } BODY STEP } }
//!     M = A ? (b) : <v moved by L>; ...
//! ```
//!
//! Its condition is the user's, so gcc sees the bound as written (and with
//! the initialisation just before it, the trip count), and nothing in it
//! counts events. The same events: the iterations left and the final
//! test.
//!
//! The shapes (`v` a local or parameter of a 32- or 64-bit integer type
//! whose address is not taken; `b` a literal, such a variable, or one of
//! them plus or minus a literal, whose type converts to `v`'s in the
//! comparison; neither assigned in the loop but by the loop's own step):
//!
//! - `for (…; v < b; v++)`, `for (…; v <= b; v++)`, `for (…; v > b; v--)`
//!   and `for (…; v >= b; v--)` (`++v`, `--v` too);
//! - `while (v-- > b)`, `while (v-- != b)` and `while (v--)`;
//! - `do … while (--v != b)` and `do … while (--v)`;
//!
//! and nothing but the condition ends the loop (`Renderer::leaves_early`
//! in regions.rs: a loop with a `break`, `return` or `goto` out often
//! ends after an iteration or two, and the head costs more than it saves).
//!
//! Distances are computed in `unsigned long long` and limits converted
//! back to `v`'s type (gcc converts modulo 2^N), so computing them is
//! never undefined; the FAST loop itself does what the user's loop would
//! do on the same iterations.

use std::collections::HashSet;

use crate::dataflow::is_assignment;
use crate::frontend::{Function, NodeId, NodeKind, Storage, TypeClass, ValueType};

use super::assignments::address_taken;
use super::regions::subtree;

/// The type the heads compute distances in: wide enough for any `v`,
/// and never undefined when it wraps.
const U: &str = "unsigned long long";

/// How a counted loop moves its variable and tests it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Shape {
    /// `for (…; v < b; v++)`, or `v <= b` (`inclusive`).
    Up { inclusive: bool },
    /// `for (…; v > b; v--)`, or `v >= b` (`inclusive`).
    Down { inclusive: bool },
    /// `while (v-- > b)` (`greater`) or `while (v-- != b)`.
    PostDecrement { greater: bool },
    /// `do … while (--v != b)`.
    PreDecrement,
}

/// A loop the FAST copy of a split loop may bound by its variable.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct CountedLoop {
    pub shape: Shape,
    /// The variable's name.
    pub variable: String,
    /// The bound's text, as the user wrote it (one line).
    pub bound: String,
    /// The variable's type is unsigned.
    pub unsigned: bool,
}

/// An integer type as (signed, bits) after the integer promotions.
fn promoted(ty: &ValueType) -> Option<(bool, u32)> {
    let signed = match ty.class {
        TypeClass::SignedInteger => true,
        TypeClass::UnsignedInteger => false,
        _ => return None,
    };
    if ty.is_volatile || ty.bits == 0 || ty.bits > 64 {
        return None;
    }
    Some(if ty.bits < 32 {
        (true, 32)
    } else {
        (signed, ty.bits)
    })
}

impl CountedLoop {
    /// Recognises loop `id` (`for`, `while` or `do`) of `function`.
    pub(super) fn recognise(function: &Function, text: &[u8], id: NodeId) -> Option<Self> {
        let node = function.node(id);
        let strip = |id: NodeId| function.strip_parens(id);
        // `roots`: the loop's condition, step and body, where only the
        // step may change the variable.
        let (shape, counter, step_node, bound, roots) = match node.kind {
            NodeKind::For { .. } => {
                let parts = function.for_parts(id)?;
                let condition = strip(parts.condition?);
                let step = strip(parts.step?);
                let (op, [left, right]) = binary(function, condition)?;
                let (step_op, operand) = unary(function, step)?;
                let shape = match (op, step_op) {
                    ("<", "++") => Shape::Up { inclusive: false },
                    ("<=", "++") => Shape::Up { inclusive: true },
                    (">", "--") => Shape::Down { inclusive: false },
                    (">=", "--") => Shape::Down { inclusive: true },
                    _ => return None,
                };
                let left = strip(left);
                if var_key(function, left)? != var_key(function, strip(operand))? {
                    return None;
                }
                let roots = vec![parts.condition?, parts.step?, parts.body];
                (shape, left, step, Some(right), roots)
            }
            NodeKind::While | NodeKind::Do => {
                let is_do = matches!(node.kind, NodeKind::Do);
                let condition = if is_do {
                    *node.children.get(1)?
                } else {
                    *node.children.first()?
                };
                let condition = strip(condition);
                // `v--` alone, or `v-- OP b`.
                let (op, stepping, bound) = match binary(function, condition) {
                    Some((op, [left, right])) => (op, strip(left), Some(right)),
                    None => ("!=", condition, None),
                };
                let (step_op, operand) = unary(function, stepping)?;
                let prefix = text
                    .get(function.node(stepping).start..)?
                    .starts_with(b"--");
                let shape = match (is_do, step_op, prefix, op) {
                    (false, "--", false, ">") => Shape::PostDecrement { greater: true },
                    (false, "--", false, "!=") => Shape::PostDecrement { greater: false },
                    (true, "--", true, "!=") => Shape::PreDecrement,
                    _ => return None,
                };
                (
                    shape,
                    strip(operand),
                    stepping,
                    bound,
                    node.children.clone(),
                )
            }
            _ => return None,
        };
        let key = var_key(function, counter)?;
        let variable = function.locals.iter().find(|v| v.key == key)?;
        if !matches!(variable.storage, Storage::Local | Storage::Parameter) {
            return None;
        }
        let (signed, bits) = promoted(&variable.ty)?;
        if variable.ty.bits < 32 {
            return None;
        }
        let taken = address_taken(function);
        let mut invariant: HashSet<usize> = HashSet::from([key]);
        let bound_text = match bound {
            None => "0".to_owned(),
            Some(bound) => {
                let (bound_signed, bound_bits, keys) = bound_type(function, text, strip(bound))?;
                // The comparison must be made in `v`'s type.
                let converts = bound_bits < bits
                    || (bound_bits == bits && (bound_signed == signed || !signed));
                if !converts {
                    return None;
                }
                for key in keys {
                    let local = function.locals.iter().find(|v| v.key == key)?;
                    if !matches!(local.storage, Storage::Local | Storage::Parameter)
                        || local.ty.is_volatile
                    {
                        return None;
                    }
                    invariant.insert(key);
                }
                let b = function.node(bound);
                let spelled = std::str::from_utf8(text.get(b.start..b.end)?).ok()?;
                if spelled.contains(['\n', '#']) {
                    return None;
                }
                spelled.to_owned()
            }
        };
        if invariant.iter().any(|key| taken.contains(key)) {
            return None;
        }
        // Only the loop's own step changes the variable; nothing changes
        // the bound's.
        for n in roots.into_iter().flat_map(|root| subtree(function, root)) {
            let inner = function.node(n);
            let target = match &inner.kind {
                NodeKind::Binary(op) if is_assignment(op) => inner.children.first(),
                NodeKind::Unary(op) if op == "++" || op == "--" => inner.children.first(),
                _ => None,
            };
            if let Some(&target) = target
                && n != step_node
                && var_key(function, strip(target)).is_some_and(|k| invariant.contains(&k))
            {
                return None;
            }
        }
        Some(CountedLoop {
            shape,
            variable: variable.name.clone(),
            bound: bound_text,
            unsigned: !signed,
        })
    }

    /// The FAST part of a counted split loop up to its body, for region
    /// `number` on local countdown `local`. It is compiled as system-header
    /// text, like FAST: what it adds warns about nothing.
    pub(super) fn head(&self, local: &str, number: usize) -> String {
        let v = &self.variable;
        let b = self.typed_bound();
        let (limit, all) = (format!("__cbi_m{number}"), format!("__cbi_a{number}"));
        let back = format!("(__typeof__({v}))(({U}){v} - ({U}){local})");
        // The limit when the loop does not end within the countdown, and
        // the test of FAST's `while` (none: `do`).
        let (moved, test) = match self.shape {
            Shape::Up { inclusive: false } => {
                (format!("(__typeof__({v}))(({U}){v} + ({U}){local})"), "<")
            }
            // One iteration more than `<` for the same distance: the limit
            // is the last value FAST runs with.
            Shape::Up { inclusive: true } => (
                format!("(__typeof__({v}))(({U}){v} + ({U}){local} - 1)"),
                "<=",
            ),
            Shape::Down { inclusive: false } | Shape::PostDecrement { greater: true } => {
                (back, ">")
            }
            Shape::Down { inclusive: true } => (
                format!("(__typeof__({v}))(({U}){v} - ({U}){local} + 1)"),
                ">=",
            ),
            Shape::PostDecrement { greater: false } => (back, "!="),
            Shape::PreDecrement => (back, ""),
        };
        let ends_within = self.ends_within(local);
        let loop_head = match self.shape {
            Shape::PreDecrement => format!("do {{ --{local};"),
            // The user's condition decrements after its test.
            Shape::PostDecrement { .. } => {
                format!("while ({v} {test} {limit}) {{ {v}--; --{local};")
            }
            _ => format!("while ({v} {test} {limit}) {{ --{local};"),
        };
        format!(
            "if (__builtin_expect({local} > 0, 1)) {{ __typeof__({v}) {limit}; int {all}; \
             {all} = {ends_within}; {limit} = {all} ? {b} : {moved}; {loop_head}"
        )
    }

    /// Whether the loop ends within the countdown `local`, as a C
    /// condition on `v`'s value now.
    fn ends_within(&self, local: &str) -> String {
        let v = &self.variable;
        let b = self.typed_bound();
        // From `v` down to the bound, exact where the loop can end there:
        // modulo the type's width when it is unsigned.
        let down = if self.unsigned {
            format!("({U})(__typeof__({v}))({v} - {b})")
        } else {
            format!("(({U}){v} - ({U}){b})")
        };
        match self.shape {
            Shape::Up { inclusive: false } => {
                format!("!({v} < {b}) || ({U}){b} - ({U}){v} < ({U}){local}")
            }
            Shape::Up { inclusive: true } => {
                format!("!({v} <= {b}) || ({U}){b} - ({U}){v} < ({U}){local} - 1")
            }
            Shape::Down { inclusive: false } | Shape::PostDecrement { greater: true } => {
                format!("!({v} > {b}) || ({U}){v} - ({U}){b} < ({U}){local}")
            }
            Shape::Down { inclusive: true } => {
                format!("!({v} >= {b}) || ({U}){v} - ({U}){b} < ({U}){local} - 1")
            }
            Shape::PostDecrement { greater: false } => format!("{down} < ({U}){local}"),
            // Iterations left, less one (the first runs whatever `v`).
            Shape::PreDecrement => {
                if self.unsigned {
                    format!("({U})(__typeof__({v}))({v} - {b} - 1) < ({U}){local}")
                } else {
                    format!("{down} - 1 < ({U}){local}")
                }
            }
        }
    }

    /// Before the loop's `for (;;)`: when the loop ends within the
    /// countdown `local` as it starts, its events taken at once and
    /// `plain`, the user's loop, run (which leaves the loop). Nothing for
    /// the shapes without [`Self::events_left`].
    pub(super) fn first_entry(&self, local: &str, plain: &str) -> String {
        let Some(events) = self.events_left() else {
            return String::new();
        };
        format!(
            "if (__builtin_expect({local} > 0 && ({}), 1)) {{ {local} -= {events};{plain} }} ",
            self.ends_within(local)
        )
    }

    /// The events of the rest of a `for` loop that ends within the
    /// countdown, as an `int` (at most the countdown): one per evaluation
    /// of its condition, the iterations left and the final test; `None`
    /// for the shapes of `while` and `do` loops, whose condition also
    /// moves the variable.
    pub(super) fn events_left(&self) -> Option<String> {
        let v = &self.variable;
        let b = self.typed_bound();
        let (test, distance, extra) = match self.shape {
            Shape::Up { inclusive } => (
                if inclusive { "<=" } else { "<" },
                format!("({U}){b} - ({U}){v}"),
                u8::from(inclusive),
            ),
            Shape::Down { inclusive } => (
                if inclusive { ">=" } else { ">" },
                format!("({U}){v} - ({U}){b}"),
                u8::from(inclusive),
            ),
            Shape::PostDecrement { .. } | Shape::PreDecrement => return None,
        };
        Some(format!(
            "(int)({v} {test} {b} ? {distance} + {extra} : 0) + 1"
        ))
    }

    /// The bound in `v`'s type, the type of the user's comparison.
    fn typed_bound(&self) -> String {
        format!("((__typeof__({}))({}))", self.variable, self.bound)
    }

    /// The FAST part after the body (and step) of a counted split loop:
    /// the loop's end and, when it ran to the loop's end, the exit to
    /// `leave` (after `exit`, the countdown's write-back); then the event
    /// that ran out, whose draw follows.
    pub(super) fn tail(&self, local: &str, number: usize, exit: &str, leave: &str) -> String {
        let (v, limit, all) = (
            &self.variable,
            format!("__cbi_m{number}"),
            format!("__cbi_a{number}"),
        );
        let (end, last) = match self.shape {
            Shape::Up { .. } | Shape::Down { .. } => (" }".to_owned(), format!("--{local}; ")),
            // The final test's decrement, as the user's loop does it.
            Shape::PostDecrement { .. } => (" }".to_owned(), format!("{v}--; --{local}; ")),
            Shape::PreDecrement => (format!(" }} while (--{v} != {limit});"), String::new()),
        };
        format!("{end} if ({all}) {{ {last}{exit}{leave} }} }} --{local};")
    }
}

/// `op` and the two operands of binary node `id`.
fn binary(function: &Function, id: NodeId) -> Option<(&str, [NodeId; 2])> {
    let node = function.node(id);
    match (&node.kind, node.children.as_slice()) {
        (NodeKind::Binary(op), [left, right]) => Some((op.as_str(), [*left, *right])),
        _ => None,
    }
}

/// `++` or `--` and its operand, for an increment or decrement node.
fn unary(function: &Function, id: NodeId) -> Option<(&str, NodeId)> {
    let node = function.node(id);
    match (&node.kind, node.children.as_slice()) {
        (NodeKind::Unary(op), [operand]) if op == "++" || op == "--" => {
            Some((op.as_str(), *operand))
        }
        _ => None,
    }
}

fn var_key(function: &Function, id: NodeId) -> Option<usize> {
    match function.node(id).kind {
        NodeKind::VarRef(key) => Some(key),
        _ => None,
    }
}

/// The promoted type of bound `id` and the variables it reads: an `int`
/// literal (no suffix), a local integer variable, or one of them plus or
/// minus the other.
fn bound_type(function: &Function, text: &[u8], id: NodeId) -> Option<(bool, u32, Vec<usize>)> {
    let node = function.node(id);
    match &node.kind {
        NodeKind::IntegerLiteral(value) if (0..=i128::from(i32::MAX)).contains(value) => {
            let spelled = text.get(node.start..node.end)?;
            let suffixed = spelled
                .last()
                .is_some_and(|c| matches!(c.to_ascii_lowercase(), b'u' | b'l'));
            (!suffixed).then(|| (true, 32, Vec::new()))
        }
        NodeKind::VarRef(key) => {
            let (signed, bits) = promoted(node.ty.as_ref()?)?;
            Some((signed, bits, vec![*key]))
        }
        NodeKind::Binary(op) if op == "+" || op == "-" => {
            let [left, right] = [node.children.first()?, node.children.get(1)?]
                .map(|&c| bound_type(function, text, function.strip_parens(c)));
            let (left, right) = (left?, right?);
            // The usual arithmetic conversions of two promoted types.
            let (signed, bits) = if left.1 != right.1 {
                if left.1 > right.1 {
                    (left.0, left.1)
                } else {
                    (right.0, right.1)
                }
            } else {
                (left.0 && right.0, left.1)
            };
            let mut keys = left.2;
            keys.extend(right.2);
            Some((signed, bits, keys))
        }
        _ => None,
    }
}
