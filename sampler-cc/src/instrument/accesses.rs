//! The schemes that observe memory and objects: `atoms` (whether the last
//! observed access to a shared location came from another thread) and
//! `g-object-unref` (the reference count an object is released with).

use sampler_formats::Scheme;

use super::assignments::address_taken;
use super::{Context, Found, Insertion};
use crate::dataflow::is_assignment;
use crate::frontend::{Function, NodeId, NodeKind, Storage};
use crate::preprocessed::site_text;

impl Context<'_> {
    /// `atoms`: every read and write of an lvalue of discrete type that may
    /// be shared between threads and is not `const`: a global or `static`
    /// variable that is not thread-local, a local whose address is taken,
    /// or memory reached through a pointer. Each access is a site (an
    /// increment or compound assignment is a read site and a write site);
    /// the lvalue is evaluated once, through its address.
    pub(super) fn atoms(
        &self,
        function: &Function,
        numbers: &[u32],
        first_id: usize,
        found: &mut Found,
    ) {
        let taken = address_taken(function);
        let mut next = first_id;
        for (id, node) in function.nodes.iter().enumerate() {
            if !node.evaluated
                || !matches!(
                    &node.kind,
                    NodeKind::VarRef(_) | NodeKind::Member { .. } | NodeKind::Subscript { .. }
                ) && !matches!(&node.kind, NodeKind::Unary(op) if op == "*")
            {
                continue;
            }
            let ty = match &node.kind {
                NodeKind::VarRef(key) => self.variable(function, *key).map(|v| &v.ty),
                _ => node.ty.as_ref(),
            };
            let Some(ty) = ty else { continue };
            if !ty.class.is_discrete()
                || ty.is_const
                || matches!(
                    node.kind,
                    NodeKind::Member {
                        bit_field: true,
                        ..
                    }
                )
                || !self.is_shared(function, id, &taken)
            {
                continue;
            }
            let Some((read, write)) = access(function, id) else {
                continue;
            };
            let statement = numbers[function.enclosing_statement(id)];
            let text = site_text(self.text, node.start, node.end);
            let address = format!("__cbi_a{id}");
            let mut observe = String::new();
            let sites_before = found.sites.len();
            for (wanted, what) in [(read, "read"), (write, "write")] {
                if !wanted {
                    continue;
                }
                let fields = vec![text.clone(), what.to_owned()];
                let Some(site) = self.site(function, node.start, statement, fields) else {
                    continue;
                };
                let count = self.increment(
                    Scheme::Atoms,
                    next,
                    &format!("__cbi_atoms_observe({address})"),
                );
                observe.push_str(&self.observe(Scheme::Atoms, next, &count));
                observe.push_str("; ");
                found.sites.push((Scheme::Atoms, site));
                next += 1;
            }
            if observe.is_empty() {
                continue;
            }
            found.mark(id, found.sites.len() - sites_before, true);
            found.insertions.push(Insertion::wrap(
                node.start,
                node.end,
                3,
                format!("(*__extension__ ({{ __auto_type {address} = &("),
                format!("); {observe}{address}; }}))"),
            ));
        }
    }

    /// Whether lvalue `id` may name memory another thread can reach.
    fn is_shared(
        &self,
        function: &Function,
        id: NodeId,
        taken: &std::collections::HashSet<usize>,
    ) -> bool {
        let id = function.strip_parens(id);
        let node = function.node(id);
        match &node.kind {
            NodeKind::VarRef(key) => self.variable(function, *key).is_some_and(|variable| {
                !variable.register
                    && match variable.storage {
                        Storage::Global | Storage::StaticLocal => !variable.thread_local,
                        Storage::Local | Storage::Parameter => taken.contains(key),
                    }
            }),
            NodeKind::Member { arrow: true, .. } | NodeKind::Subscript { array_base: false } => {
                true
            }
            NodeKind::Unary(op) if op == "*" => true,
            NodeKind::Member { arrow: false, .. } | NodeKind::Subscript { array_base: true } => {
                node.children
                    .first()
                    .is_some_and(|&base| self.is_shared(function, base, taken))
            }
            _ => false,
        }
    }

    /// `g-object-unref`: each call written `g_object_unref(x)` counts how
    /// `x` is released: 0 its reference count is already 0, 1 this call
    /// frees it, 2 it lives on, 3 `x` is not a GObject.
    pub(super) fn g_object_unrefs(
        &self,
        function: &Function,
        numbers: &[u32],
        first_id: usize,
        found: &mut Found,
    ) {
        let mut next = first_id;
        for (id, node) in function.nodes.iter().enumerate() {
            let NodeKind::Call(call) = &node.kind else {
                continue;
            };
            let &[_, argument_id] = node.children.as_slice() else {
                continue;
            };
            if !node.evaluated
                || call.direct.as_deref() != Some("g_object_unref")
                || call.n_arguments != 1
            {
                continue;
            }
            let argument = function.node(argument_id);
            let statement = numbers[function.enclosing_statement(id)];
            let text = site_text(self.text, argument.start, argument.end);
            let Some(site) = self.site(function, node.start, statement, vec![text]) else {
                continue;
            };
            let object = format!("__cbi_g{id}");
            let count = self.count(
                Scheme::GObjectUnref,
                next,
                &format!("__cbi_g_object_classify({object})"),
            );
            found.insertions.push(Insertion::wrap(
                argument.start,
                argument.end,
                1,
                format!("__extension__ ({{ __auto_type {object} = ("),
                format!("); {count} {object}; }})"),
            ));
            found.sites.push((Scheme::GObjectUnref, site));
            found.mark(argument_id, 1, false);
            next += 1;
        }
    }
}

/// Keys of the variables the user's code reads somewhere in `unit` (its
/// value, or its address). Only those are compared with or reread: a
/// read of ours would silence gcc's -Wunused-parameter, -Wunused-variable
/// and -Wunused-but-set-variable.
pub(super) fn user_reads(unit: &crate::frontend::Unit) -> std::collections::HashSet<usize> {
    let mut read = std::collections::HashSet::new();
    for function in &unit.functions {
        for (id, node) in function.nodes.iter().enumerate() {
            if let NodeKind::VarRef(key) = node.kind
                && node.evaluated
                && access(function, id).is_none_or(|(reads, _)| reads)
            {
                read.insert(key);
            }
        }
    }
    read
}

/// How lvalue `id` is accessed: (read, write), or `None` when it is only
/// addressed (`&x`, an array or struct base).
fn access(function: &Function, id: NodeId) -> Option<(bool, bool)> {
    let mut child = id;
    let mut parent = function.node(id).parent?;
    while matches!(
        function.node(parent).kind,
        NodeKind::Paren | NodeKind::Implicit
    ) {
        child = parent;
        parent = function.node(parent).parent?;
    }
    let node = function.node(parent);
    let first = node.children.first() == Some(&child);
    match &node.kind {
        NodeKind::Unary(op) if op == "&" => None,
        NodeKind::Unary(op) if op == "++" || op == "--" => Some((true, true)),
        NodeKind::Binary(op) if first && op == "=" => Some((false, true)),
        NodeKind::Binary(op) if first && is_assignment(op) => Some((true, true)),
        NodeKind::Member { arrow: false, .. } | NodeKind::Subscript { array_base: true }
            if first =>
        {
            None
        }
        NodeKind::Call(_) if first => None,
        NodeKind::Opaque => None,
        _ => Some((true, false)),
    }
}
