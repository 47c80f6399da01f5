//! The schemes that observe assigned values: `scalar-pairs` (the new value
//! against every other value of its type in scope), `bounds` (running
//! minimum and maximum) and `float-kinds` (the class of a floating-point
//! value).
//!
//! An assignment is rewritten so that the new value is computed into a
//! temporary `V`, observed, then stored, with the user's own operator (and
//! hence gcc's own diagnostics) applied once:
//!
//! | form | becomes |
//! |---|---|
//! | `x = e` | `x = ({ T V; V = (e); sites V; })` |
//! | `x += e` | `x = ({ T V = x; V += (e); sites V; })` |
//! | `x++` | `(({ T V = x; ++V; sites }), x++)` |
//! | `T x = e;` | `T x = ({ T V = (e); sites V; });` |
//!
//! where `T` is `__typeof__(x)`. Compound assignments and increments of
//! anything but a plain variable are only rewritten when the lvalue has no
//! side effects, since it is read twice.

use std::collections::{HashMap, HashSet};
use std::fmt::Write as _;

use sampler_formats::Scheme;

use super::{BOUNDS_POINTER, BOUNDS_SIGNED, BOUNDS_UNSIGNED, Context, Found, Insertion, symbol};
use crate::dataflow::{self, is_assignment};
use crate::frontend::{Function, NodeId, NodeKind, Storage, TypeClass, ValueType, Variable};
use crate::preprocessed::site_text;

/// The next site id of each assignment scheme that is active.
pub(super) struct FirstIds {
    pub scalar_pairs: Option<usize>,
    pub bounds: Option<usize>,
    pub float_kinds: Option<usize>,
}

/// How the assignment is written.
enum Form {
    /// `lvalue = value`, with the offset of the `=`.
    Assign { value: NodeId, operator: usize },
    /// `lvalue op= value`, with the operator's offset.
    Compound { value: NodeId, operator: usize },
    /// `++`/`--`, prefix or postfix.
    Step { op: String },
    /// An initialised local declaration.
    Declaration { value: NodeId },
}

/// What an assignment stores into.
struct Target<'f> {
    /// The lvalue as the site table shows it.
    text: String,
    /// The lvalue as C for rereading.
    code: String,
    /// Its type as C: `__typeof__(code)`, or for a variable the user never
    /// reads the type's spelling, since `__typeof__(x)` counts as a read
    /// of `x` for gcc and would hide `-Wunused-but-set-variable`.
    type_code: String,
    host: &'static str,
    offset: &'static str,
    ty: ValueType,
    /// The variable itself, for a whole named variable.
    variable: Option<&'f Variable>,
}

/// Whether a variable's name is one the user wrote: not a reserved name of
/// the implementation (`__x`, as glibc's macros declare) nor ours.
pub(super) fn is_user_name(name: &str) -> bool {
    !name.starts_with("__") && !name.starts_with("cbi_")
}

/// Whether `scalar-pairs` may compare with global `global` (wherever it is
/// declared; the caller checks that it is before the function and not in a
/// system header): a user name, not `volatile`, and either defined here
/// with external linkage, read by any unit or none (CBI's rule: every
/// global of the type), or read by this unit's code. A `static` global the
/// unit never reads keeps gcc's -Wunused-variable, and an `extern`
/// declaration the unit never reads may name a variable the program does
/// not define (the original's CIL removed such declarations before
/// instrumenting, so it did not compare with them either).
pub(super) fn is_candidate_global(global: &Variable, user_reads: &HashSet<usize>) -> bool {
    is_user_name(&global.name)
        && !global.ty.is_volatile
        && (global.defined_external || user_reads.contains(&global.key))
}

/// `scalar-pairs`' constant pool with `-fcompare-constants`: 0 and every
/// integer literal (negated under a unary minus) of `functions`, ascending.
pub(super) fn unit_constants(functions: &[&Function]) -> Vec<i128> {
    let mut constants = vec![0];
    for function in functions {
        for node in &function.nodes {
            let NodeKind::IntegerLiteral(value) = node.kind else {
                continue;
            };
            if !node.evaluated {
                continue;
            }
            let negated = node.parent.and_then(|p| strip_up(function, p)).is_some_and(
                |p| matches!(&function.node(p).kind, NodeKind::Unary(op) if op == "-"),
            );
            constants.push(if negated { -value } else { value });
        }
    }
    constants.sort_unstable();
    constants.dedup();
    constants
}

/// Lines that turn gcc's -Wuse-after-free off until the matching
/// `#pragma GCC diagnostic pop` (-Wpragmas: gcc before 12 does not know the
/// option).
const WARNINGS_OFF: &str = "#pragma GCC diagnostic push\n\
     #pragma GCC diagnostic ignored \"-Wpragmas\"\n\
     #pragma GCC diagnostic ignored \"-Wuse-after-free\"\n";

/// The first ancestor-or-self of `id` that is not a parenthesis or an
/// implicit conversion.
fn strip_up(function: &Function, mut id: NodeId) -> Option<NodeId> {
    loop {
        let node = function.node(id);
        if !matches!(node.kind, NodeKind::Paren | NodeKind::Implicit) {
            return Some(id);
        }
        id = node.parent?;
    }
}

/// Keys of the variables whose address is taken with `&` in `function`.
/// The local (or parameter) `name` visible at `at`, if any.
fn visible_local<'f>(function: &'f Function, at: usize, name: &str) -> Option<&'f Variable> {
    function
        .locals
        .iter()
        .filter(|v| v.name == name && v.key <= at && at < v.scope_end)
        .max_by_key(|v| v.key)
}

pub(super) fn address_taken(function: &Function) -> HashSet<usize> {
    let mut taken = HashSet::new();
    for node in &function.nodes {
        if matches!(&node.kind, NodeKind::Unary(op) if op == "&")
            && let Some(&operand) = node.children.first()
            && let NodeKind::VarRef(key) = function.node(function.strip_parens(operand)).kind
        {
            taken.insert(key);
        }
    }
    taken
}

/// Whether evaluating `id` twice is the same as once: no calls,
/// assignments, increments or statement expressions inside.
fn is_pure(function: &Function, id: NodeId) -> bool {
    let mut stack = vec![id];
    while let Some(id) = stack.pop() {
        let node = function.node(id);
        let impure = match &node.kind {
            NodeKind::Call(_) | NodeKind::StmtExpr => true,
            NodeKind::Binary(op) => is_assignment(op),
            NodeKind::Unary(op) => op == "++" || op == "--",
            _ => false,
        };
        if impure || node.ty.as_ref().is_some_and(|ty| ty.is_volatile) {
            return false;
        }
        stack.extend(&node.children);
    }
    true
}

impl Context<'_> {
    /// The variable a key names: a local or parameter of `function`, or a
    /// global.
    pub(super) fn variable<'f>(
        &'f self,
        function: &'f Function,
        key: usize,
    ) -> Option<&'f Variable> {
        function
            .locals
            .iter()
            .find(|v| v.key == key)
            .or_else(|| self.globals.get(&key).copied())
    }

    /// `local` or `global` for a named variable the user wrote, `mem` for
    /// memory reached through a pointer; `None` for anything else (a call's
    /// result, a compound literal).
    fn host(&self, function: &Function, id: NodeId) -> Option<&'static str> {
        let id = function.strip_parens(id);
        let node = function.node(id);
        match &node.kind {
            NodeKind::VarRef(key) => {
                let variable = self.variable(function, *key)?;
                if !is_user_name(&variable.name) {
                    return None;
                }
                Some(if variable.storage == Storage::Global {
                    "global"
                } else {
                    "local"
                })
            }
            NodeKind::Member { arrow: true, .. } | NodeKind::Subscript { array_base: false } => {
                Some("mem")
            }
            NodeKind::Unary(op) if op == "*" => Some("mem"),
            NodeKind::Member { arrow: false, .. } | NodeKind::Subscript { array_base: true } => {
                self.host(function, *node.children.first()?)
            }
            _ => None,
        }
    }

    /// The target of an assignment to `lvalue`, if the options make it a
    /// site.
    fn target<'f>(
        &'f self,
        function: &'f Function,
        lvalue: NodeId,
        rereads: bool,
    ) -> Option<Target<'f>> {
        let id = function.strip_parens(lvalue);
        let node = function.node(id);
        let (host, offset, variable) = match &node.kind {
            NodeKind::VarRef(key) => {
                let variable = self.variable(function, *key)?;
                (self.host(function, id)?, "direct", Some(variable))
            }
            NodeKind::Member {
                bit_field: false, ..
            } => (self.host(function, id)?, "field", None),
            NodeKind::Subscript { array_base: true } => (self.host(function, id)?, "index", None),
            NodeKind::Subscript { array_base: false } => ("mem", "direct", None),
            NodeKind::Unary(op) if op == "*" => ("mem", "direct", None),
            _ => return None,
        };
        let options = self.options;
        let allowed = match (host, offset) {
            (_, "field") if !options.assign_into_field => false,
            (_, "index") if !options.assign_into_index => false,
            ("mem", _) => options.assign_across_pointer,
            _ => true,
        };
        let ty = variable.map(|v| v.ty.clone()).or_else(|| node.ty.clone())?;
        if !allowed || ty.is_volatile || ty.is_const || ty.class == TypeClass::Other {
            return None;
        }
        let code = match variable {
            // Rereading a variable the user never reads would hide gcc's
            // -Wunused-but-set-variable.
            Some(variable) if rereads && !self.user_reads.contains(&variable.key) => return None,
            Some(variable) => variable.name.clone(),
            None => {
                let raw = &self.text[node.start..node.end];
                if raw.contains(&b'\n') || (rereads && !is_pure(function, id)) {
                    return None;
                }
                String::from_utf8(raw.to_vec()).ok()?
            }
        };
        let type_code = self.type_code(variable, &code, &ty)?;
        Some(Target {
            text: site_text(self.text, node.start, node.end),
            code,
            type_code,
            host,
            offset,
            ty,
            variable,
        })
    }

    /// The type of a target as C (see [`Target::type_code`]); `None` when a
    /// variable the user never reads has a type C cannot spell (an
    /// anonymous `struct`, a variably modified type): its assignments are
    /// then not sites.
    fn type_code(&self, variable: Option<&Variable>, code: &str, ty: &ValueType) -> Option<String> {
        match variable {
            Some(variable) if !self.user_reads.contains(&variable.key) => {
                let spelling = &ty.spelling;
                let unspellable = spelling.is_empty()
                    || spelling.contains('[')
                    || spelling.contains("(anonymous")
                    || spelling.contains("(unnamed");
                (!unspellable).then(|| format!("__typeof__({spelling})"))
            }
            _ => Some(format!("__typeof__({code})")),
        }
    }

    /// Whether the variable `name` visible at `at` is declared `register`.
    fn is_register(&self, function: &Function, at: usize, name: &str) -> bool {
        visible_local(function, at, name).is_some_and(|v| v.register)
    }

    /// Finds the assignments of `function` and adds the sites of the active
    /// assignment schemes.
    pub(super) fn assignments(
        &self,
        function: &Function,
        numbers: &[u32],
        mut ids: FirstIds,
        found: &mut Found,
    ) {
        if ids.scalar_pairs.is_none() && ids.bounds.is_none() && ids.float_kinds.is_none() {
            return;
        }
        if let Some(first) = ids.float_kinds.as_mut() {
            self.float_parameters(function, first, found);
        }
        let mut assignments: Vec<(NodeId, Form, Target<'_>)> = Vec::new();
        for (id, node) in function.nodes.iter().enumerate() {
            if !node.evaluated {
                continue;
            }
            let children = node.children.as_slice();
            let (form, lvalue_target) = match (&node.kind, children) {
                (NodeKind::Binary(op), [lvalue, value]) if op == "=" => {
                    let at =
                        crate::preprocessed::skip_trivia(self.text, function.node(*lvalue).end);
                    let ok = self.text.get(at) == Some(&b'=');
                    (
                        Form::Assign {
                            value: *value,
                            operator: at,
                        },
                        self.target(function, *lvalue, false).filter(|_| ok),
                    )
                }
                (NodeKind::Binary(op), [lvalue, value]) if is_assignment(op) => {
                    let at =
                        crate::preprocessed::skip_trivia(self.text, function.node(*lvalue).end);
                    let form = Form::Compound {
                        value: *value,
                        operator: at,
                    };
                    let ok = self.text.get(at..at + op.len()) == Some(op.as_bytes());
                    (form, self.target(function, *lvalue, true).filter(|_| ok))
                }
                (NodeKind::Unary(op), [lvalue]) if op == "++" || op == "--" => (
                    Form::Step { op: op.clone() },
                    self.target(function, *lvalue, true),
                ),
                (
                    NodeKind::Decl {
                        key,
                        initialised: true,
                    },
                    [.., value],
                ) => {
                    let target = self.variable(function, *key).and_then(|variable| {
                        let ty = &variable.ty;
                        let usable = is_user_name(&variable.name)
                            && !ty.is_volatile
                            && ty.class != TypeClass::Other
                            && self.text.get(function.node(*value).start) != Some(&b'{');
                        let type_code = self.type_code(Some(variable), &variable.name, ty)?;
                        usable.then(|| Target {
                            text: variable.name.clone(),
                            code: variable.name.clone(),
                            type_code,
                            host: "local",
                            offset: "direct",
                            ty: ty.clone(),
                            variable: Some(variable),
                        })
                    });
                    (Form::Declaration { value: *value }, target)
                }
                _ => continue,
            };
            if let Some(target) = lvalue_target {
                assignments.push((id, form, target));
            }
        }
        if assignments.is_empty() {
            return;
        }
        let taken = address_taken(function);
        let tracked: HashMap<usize, usize> = function
            .locals
            .iter()
            .filter(|v| v.storage == Storage::Local && !taken.contains(&v.key))
            .enumerate()
            .map(|(index, v)| (v.key, index))
            .collect();
        let initialised = if ids.scalar_pairs.is_some() && !tracked.is_empty() {
            let points: Vec<NodeId> = assignments.iter().map(|(id, ..)| *id).collect();
            dataflow::initialised_at(function, &tracked, &points)
        } else {
            Vec::new()
        };
        for (index, (id, form, target)) in assignments.into_iter().enumerate() {
            let node = function.node(id);
            let at = match (&form, target.variable) {
                (Form::Declaration { .. }, Some(variable)) => variable.key,
                _ => node.start,
            };
            let statement = numbers[function.enclosing_statement(id)];
            let value = format!("__cbi_v{id}");
            let mut code = String::new();
            let sites_before = found.sites.len();
            // Checks that sites observed together spare (below).
            let mut saved_checks = 0;
            let fields = || {
                vec![
                    target.text.clone(),
                    target.host.to_owned(),
                    target.offset.to_owned(),
                ]
            };
            if let Some(next) = ids.scalar_pairs.as_mut()
                && target.ty.class.is_discrete()
            {
                let declaration = matches!(form, Form::Declaration { .. });
                let visible = |candidate: &Variable| -> Option<&'static str> {
                    if declaration && target.variable.is_some_and(|v| v.key == candidate.key) {
                        return None;
                    }
                    match candidate.storage {
                        Storage::Global => Some("global"),
                        Storage::Parameter | Storage::StaticLocal => Some("local-init"),
                        Storage::Local => match tracked.get(&candidate.key) {
                            None => Some("local-init"),
                            Some(&bit) => {
                                let state = initialised.get(index)?;
                                if state.must.contains(bit) {
                                    Some("local-init")
                                } else if state.may.contains(bit)
                                    && !candidate.register
                                    && self.options.compare_uninitialized
                                {
                                    Some("local-uninit")
                                } else {
                                    None
                                }
                            }
                        },
                    }
                };
                let pointer = target.ty.class == TypeClass::Pointer;
                // Pointers are compared as integers: `<` between pointers
                // into different objects is undefined, and a freed
                // pointer's value may not be compared as a pointer (but
                // its representation, as an integer, may); `unsigned long`
                // is pointer-sized on every ELF ABI (the `.i` has no
                // `__UINTPTR_TYPE__` macro any more).
                let (ty, new) = if pointer {
                    (
                        "unsigned long".to_owned(),
                        format!("(unsigned long){value}"),
                    )
                } else {
                    (format!("__typeof__({value})"), value.clone())
                };
                // Sampled, the unit's helpers compare and count
                // (`-fsample-pair-helpers`): the helpers' suffix and the
                // type both values are converted to.
                let helper = pair_helper(&target.ty)
                    .filter(|_| self.options.sample && self.options.pair_helpers);
                let mut reads: Vec<PairRead<'_>> = Vec::new();
                for (candidate, kind) in self.candidates(function, at, &target.ty, visible) {
                    // A pointer is read through a `volatile` access (below),
                    // which a `register` variable cannot have.
                    if pointer && kind != "const" && self.is_register(function, at, &candidate) {
                        continue;
                    }
                    let Some(site) = self.site(function, at, statement, {
                        let mut f = fields();
                        f.push(candidate.clone());
                        f.push(kind.to_owned());
                        f
                    }) else {
                        continue;
                    };
                    let guarded = pointer && kind == "local-init";
                    let other = match kind {
                        "const" => constant_code(&candidate),
                        // A local whose address the user takes is not
                        // followed by the data flow ("local-init" by CBI's
                        // rule) and may be unset here: read plainly where
                        // the read is unconditional (`-fno-sample`), gcc
                        // says it "is used uninitialized". Its address goes
                        // through an empty `asm`, after which gcc no longer
                        // knows what the load reads; the address escapes
                        // already, so this hides none of gcc's own warnings.
                        _ if visible_local(function, at, &candidate).is_some_and(|v| {
                            v.storage == Storage::Local && taken.contains(&v.key)
                        }) =>
                        {
                            format!(
                                "__extension__ ({{ __typeof__({candidate}) *__cbi_p = &{candidate}; \
                                 __asm__(\"\" : \"+r\"(__cbi_p)); *__cbi_p; }})"
                            )
                        }
                        // A pointer local or parameter that is set here is
                        // read plainly, in code where gcc's -Wuse-after-free
                        // is off (below). Not through its address: gcc would
                        // then think a function's result may point to the
                        // variable once inlined (-Wdangling-pointer, bc's
                        // dc.c), and the variable would live in memory.
                        _ if guarded => candidate.clone(),
                        // A read gcc does not follow: reading a variable that
                        // may be uninitialised must not add a
                        // -Wmaybe-uninitialized warning, nor reading a
                        // pointer that may have been freed a
                        // -Wuse-after-free. (`volatile`, not the `asm` above:
                        // an escaping address would hide gcc's own
                        // "may be used uninitialized" on the user's reads.)
                        _ if kind == "local-uninit" || pointer => {
                            format!("*(volatile __typeof__({candidate}) *)&{candidate}")
                        }
                        _ => candidate,
                    };
                    let other = if pointer {
                        format!("(unsigned long){other}")
                    } else {
                        other
                    };
                    reads.push(PairRead {
                        id: *next,
                        ty: &ty,
                        other,
                        guarded,
                    });
                    found.sites.push((Scheme::ScalarPairs, site));
                    *next += 1;
                }
                let first = reads.first().map_or(0, |read| read.id);
                if let Some((suffix, cast)) = helper
                    && self.observe_pairs_together(&reads)
                {
                    // One event for all the assignment's candidates: one
                    // check, and a call of a group helper for each
                    // PAIRS_PER_CALL of them (BENCHMARKS.md, stop 42).
                    let mut group = String::from("__extension__ ({ ");
                    for (index, read) in reads.iter().enumerate() {
                        group.push_str(&read.declaration(&format!("__cbi_o{index}")));
                    }
                    let mut calls = Vec::new();
                    let mut done = 0;
                    for n in pair_calls(reads.len()) {
                        self.pair_groups.borrow_mut().insert((n, suffix));
                        let values: String = (done..done + n)
                            .map(|index| format!(", ({cast})__cbi_o{index}"))
                            .collect();
                        calls.push(format!(
                            "{prefix}_pairs{n}_{suffix}(&{prefix}_{table}[{}][0], ({cast})({new}){values})",
                            first + done,
                            prefix = self.prefix,
                            table = symbol(Scheme::ScalarPairs),
                        ));
                        done += n;
                    }
                    let _ = write!(group, "{}; }})", calls.join(", "));
                    code.push_str(&self.observe_sites(
                        Scheme::ScalarPairs,
                        first..first + reads.len(),
                        &group,
                    ));
                    code.push_str("; ");
                    saved_checks = reads.len() - 1;
                } else {
                    for read in &reads {
                        let increment = match helper {
                            // Each candidate one call with its two values
                            // (BENCHMARKS.md, stop 41).
                            Some((suffix, cast)) => format!(
                                "{}_pair_{suffix}(&{}_{}[{}][0], ({cast})({new}), ({cast})__cbi_o)",
                                self.prefix,
                                self.prefix,
                                symbol(Scheme::ScalarPairs),
                                read.id
                            ),
                            None => self.increment(
                                Scheme::ScalarPairs,
                                read.id,
                                &format!("({new} > __cbi_o) + ({new} >= __cbi_o)"),
                            ),
                        };
                        let compare = format!(
                            "__extension__ ({{ {}{increment}; }})",
                            read.declaration("__cbi_o")
                        );
                        code.push_str(&self.observe(Scheme::ScalarPairs, read.id, &compare));
                        code.push_str("; ");
                    }
                }
            }
            if let Some(next) = ids.bounds.as_mut()
                && target.ty.class.is_discrete()
                && target.ty.bits <= 64
                && let Some(mut site) = self.site(function, at, statement, fields())
            {
                let (kind, helper, cast) = match target.ty.class {
                    TypeClass::SignedInteger | TypeClass::Enum => {
                        (BOUNDS_SIGNED, "signed", "(long long)")
                    }
                    TypeClass::Pointer => (
                        BOUNDS_POINTER,
                        "unsigned",
                        "(unsigned long long)(unsigned long)",
                    ),
                    _ => (BOUNDS_UNSIGNED, "unsigned", "(unsigned long long)"),
                };
                site.bounds_kind = kind;
                let mut update = format!(
                    "{}_bound_{helper}({}_bounds[{next}], {cast}{value})",
                    self.prefix, self.prefix
                );
                if self.options.sample {
                    update = format!("({update}, {})", self.trace(Scheme::Bounds, *next));
                }
                code.push_str(&self.observe(Scheme::Bounds, *next, &update));
                code.push_str("; ");
                found.sites.push((Scheme::Bounds, site));
                *next += 1;
            }
            if let Some(next) = ids.float_kinds.as_mut()
                && target.ty.class == TypeClass::Float
                && let Some(site) = self.site(function, at, statement, fields())
            {
                code.push_str(&self.float_observation(*next, &value));
                code.push_str("; ");
                found.sites.push((Scheme::FloatKinds, site));
                *next += 1;
            }
            if code.is_empty() {
                continue;
            }
            // The events happen when the new value is computed: in a
            // declaration, its initialiser (the declaration is no
            // expression).
            let anchor = match form {
                Form::Declaration { value: init } => init,
                _ => id,
            };
            let sites = found.sites.len() - sites_before;
            found.mark_checks(anchor, sites, sites - saved_checks, false);
            found
                .insertions
                .extend(rewrite(function, id, &form, &target, &value, &code));
        }
    }

    /// `float-kinds` sites for the floating-point parameters, observed at
    /// the function's entry.
    fn float_parameters(&self, function: &Function, next: &mut usize, found: &mut Found) {
        for parameter in &function.locals {
            if parameter.storage != Storage::Parameter
                || parameter.ty.class != TypeClass::Float
                || !is_user_name(&parameter.name)
                || !self.user_reads.contains(&parameter.key)
            {
                continue;
            }
            let fields = vec![parameter.name.clone(), "local".into(), "direct".into()];
            let Some(site) = self.site(function, parameter.key, 0, fields) else {
                continue;
            };
            let statements = format!("{};", self.float_observation(*next, &parameter.name));
            let name = format!("__cbi_fk{}", *next);
            found
                .insertions
                .push(self.entry_declaration(function, &name, &statements));
            found.sites.push((Scheme::FloatKinds, site));
            *next += 1;
        }
    }

    /// Counts the class of floating-point `value` for site `id`: 0 -inf,
    /// 1 negative normal, 2 negative subnormal, 3 -0, 4 NaN, 5 +0,
    /// 6 positive subnormal, 7 positive normal, 8 +inf. Classified in its
    /// own type (a `float` subnormal is normal as a `long double`), with no
    /// floating-point comparison (-Wfloat-equal).
    fn float_observation(&self, id: usize, value: &str) -> String {
        let count = self.increment(
            Scheme::FloatKinds,
            id,
            &format!("__cbi_k != 4 && __builtin_signbit({value}) ? 8 - __cbi_k : __cbi_k"),
        );
        let classify = format!(
            "__extension__ ({{ int __cbi_k = __builtin_fpclassify(4, 8, 7, 6, 5, {value}); {count}; }})"
        );
        self.observe(Scheme::FloatKinds, id, &classify)
    }

    /// Whether an assignment's `scalar-pairs` candidates `reads`, observed
    /// through the pair helpers, are observed together: sampled per region
    /// (`-fsample-sites` decides for each site), two candidates or more,
    /// all of one scale (rates may give each its own).
    fn observe_pairs_together(&self, reads: &[PairRead<'_>]) -> bool {
        let scale = |read: &PairRead<'_>| self.scale(Scheme::ScalarPairs, read.id);
        self.options.sample_regions
            && reads.len() >= 2
            && reads.iter().all(|read| scale(read) == scale(&reads[0]))
    }

    /// The values `scalar-pairs` compares a new value of type `ty` with at
    /// offset `at`, each with its kind: the variables of the same type
    /// visible there (globals declared earlier, parameters, locals in
    /// scope, each unless shadowed), as `kind_of` classifies them, then the
    /// constants.
    fn candidates(
        &self,
        function: &Function,
        at: usize,
        ty: &ValueType,
        kind_of: impl Fn(&Variable) -> Option<&'static str>,
    ) -> Vec<(String, &'static str)> {
        let locals: Vec<&Variable> = function
            .locals
            .iter()
            .filter(|v| v.key <= at && at < v.scope_end)
            .collect();
        // Of two visible declarations of a name, the later one is the
        // inner one.
        let innermost: HashMap<&str, usize> = locals.iter().fold(HashMap::new(), |mut map, v| {
            let key = map.entry(v.name.as_str()).or_insert(v.key);
            *key = (*key).max(v.key);
            map
        });
        let globals =
            self.candidate_globals.iter().copied().filter(|v| {
                v.declared_at < function.start && !innermost.contains_key(v.name.as_str())
            });
        let locals = locals.iter().copied().filter(|v| {
            innermost.get(v.name.as_str()) == Some(&v.key)
                && !v.ty.is_volatile
                && is_user_name(&v.name)
                && self.user_reads.contains(&v.key)
        });
        let mut out = Vec::new();
        for variable in globals.chain(locals) {
            if variable.ty.key != ty.key {
                continue;
            }
            if let Some(kind) = kind_of(variable) {
                out.push((variable.name.clone(), kind));
            }
        }
        match ty.class {
            TypeClass::Pointer => out.push((format!("({})0", ty.spelling), "const")),
            TypeClass::UnsignedInteger => {
                let max = if ty.spelling == "_Bool" {
                    1
                } else {
                    (1i128 << ty.bits.min(127)) - 1
                };
                for &constant in self.constants.iter().filter(|&&c| (0..=max).contains(&c)) {
                    out.push((format!("{constant}ULL"), "const"));
                }
            }
            _ => {
                let half = 1i128 << ty.bits.clamp(1, 127).saturating_sub(1);
                for &constant in self
                    .constants
                    .iter()
                    .filter(|&&c| (-half..half).contains(&c))
                {
                    out.push((format!("{constant}LL"), "const"));
                }
            }
        }
        out
    }
}

/// A constant of the site table as C: `(T)0` is `0` once assigned to a
/// temporary of type T; literals stay as they are.
fn constant_code(text: &str) -> String {
    if text.starts_with('(') {
        "0".to_owned()
    } else if text == format!("{}LL", i64::MIN) {
        // Not a literal C can write: its magnitude overflows.
        "(-0x7fffffffffffffffLL - 1)".to_owned()
    } else {
        text.to_owned()
    }
}

/// The insertions that rewrite assignment `id` so that `observe` runs
/// between computing the new value (into `value`) and storing it.
fn rewrite(
    function: &Function,
    id: NodeId,
    form: &Form,
    target: &Target<'_>,
    value: &str,
    observe: &str,
) -> Vec<Insertion> {
    let ty = &target.type_code;
    let lvalue = &target.code;
    let node = function.node(id);
    // The user's operator and value stay where they are, in our copy's
    // assignment: `x = v` becomes `x = ({ T t; t = v; ...; t; })` with the
    // second `=` and `v` the user's own tokens at their own columns, so
    // that gcc's warnings about the assignment (a conversion, an
    // uninitialised value) point where the user wrote it. The value needs
    // no parentheses: it is an assignment-expression either way.
    match form {
        Form::Assign {
            value: rhs,
            operator,
        } => {
            let rhs = function.node(*rhs);
            vec![
                Insertion::point(
                    *operator,
                    format!("= __extension__ ({{ {ty} {value}; {value} "),
                ),
                Insertion::wrap(
                    rhs.start,
                    rhs.end,
                    1,
                    String::new(),
                    format!("; {observe}{value}; }})"),
                ),
            ]
        }
        Form::Compound {
            value: rhs,
            operator: start,
        } => {
            let rhs = function.node(*rhs);
            vec![
                Insertion::point(
                    *start,
                    format!("= __extension__ ({{ {ty} {value} = {lvalue}; {value} "),
                ),
                Insertion::wrap(
                    rhs.start,
                    rhs.end,
                    1,
                    String::new(),
                    format!("; {observe}{value}; }})"),
                ),
            ]
        }
        // Inside the wrap of an assignment whose value it is (`x = y++`),
        // which has the same extent: a higher rank goes inside.
        Form::Step { op } => vec![Insertion::wrap(
            node.start,
            node.end,
            2,
            format!("(__extension__ ({{ {ty} {value} = {lvalue}; {op}{value}; {observe}}}), "),
            ")".to_owned(),
        )],
        Form::Declaration { value: init } => {
            let init = function.node(*init);
            vec![Insertion::wrap(
                init.start,
                init.end,
                1,
                format!("__extension__ ({{ {ty} {value} = "),
                format!("; {observe}{value}; }})"),
            )]
        }
    }
}

/// The `pair` helper (prelude, `instrument::Context::prelude`) that
/// compares a `scalar-pairs` site's two values of type `ty` and counts
/// the outcome, with the type both are converted to: `s` (`long long`)
/// for every type of 32 bits or fewer, whatever its signedness (which
/// `char` and enumerations leave to the compiler: `long long` holds both
/// orders), and for 64-bit signed integers; `u` (`unsigned long long`)
/// for 64-bit unsigned integers and pointers (compared as `unsigned
/// long`). `None` for wider types and 64-bit enumerations, which keep
/// their comparison in place.
fn pair_helper(ty: &ValueType) -> Option<(&'static str, &'static str)> {
    match (ty.class, ty.bits) {
        (_, 0..=32) => Some(("s", "long long")),
        (TypeClass::SignedInteger, 64) => Some(("s", "long long")),
        (TypeClass::UnsignedInteger | TypeClass::Pointer, 64) => Some(("u", "unsigned long long")),
        _ => None,
    }
}

/// The most candidates one call of a group helper (`pairsN`) observes:
/// with the row and the value, as many arguments as x86-64 passes in
/// registers.
pub(super) const PAIRS_PER_CALL: usize = 4;

/// How many candidates each call of a group helper observes, for `count`
/// of them (two or more): PAIRS_PER_CALL at a time, the rest two to
/// PAIRS_PER_CALL (five are three and two).
fn pair_calls(mut count: usize) -> Vec<usize> {
    let mut calls = Vec::new();
    while count > PAIRS_PER_CALL {
        let n = if count == PAIRS_PER_CALL + 1 {
            PAIRS_PER_CALL - 1
        } else {
            PAIRS_PER_CALL
        };
        calls.push(n);
        count -= n;
    }
    calls.push(count);
    calls
}

/// How one `scalar-pairs` candidate is read for an assignment: the
/// value it is compared with, converted to the assigned value's type
/// `ty` (or `unsigned long`, for pointers).
struct PairRead<'t> {
    /// The candidate's site.
    id: usize,
    ty: &'t str,
    other: String,
    /// A pointer that may have been freed: read where gcc's warnings
    /// about it are off.
    guarded: bool,
}

impl PairRead<'_> {
    /// The declaration of `name` holding the candidate's value.
    fn declaration(&self, name: &str) -> String {
        let (ty, other) = (self.ty, &self.other);
        if self.guarded {
            // Comparing a pointer that may have been freed as an integer
            // is what the user's program cannot do, so gcc's warning about
            // it is not the user's. The pragmas (lines of their own; the
            // insertion puts the user's text back at its line and column
            // after them) cover only this read.
            format!("\n{WARNINGS_OFF}{ty} {name} = {other};\n#pragma GCC diagnostic pop\n")
        } else {
            format!("{ty} {name} = {other}; ")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn group_helper_calls_cover_every_candidate_two_to_four_at_a_time() {
        assert_eq!(pair_calls(2), [2]);
        assert_eq!(pair_calls(4), [4]);
        assert_eq!(pair_calls(5), [3, 2]);
        assert_eq!(pair_calls(6), [4, 2]);
        assert_eq!(pair_calls(9), [4, 3, 2]);
        for count in 2..200 {
            let calls = pair_calls(count);
            assert_eq!(calls.iter().sum::<usize>(), count);
            assert!(
                calls.iter().all(|&n| (2..=PAIRS_PER_CALL).contains(&n)),
                "{count}"
            );
        }
    }
}
