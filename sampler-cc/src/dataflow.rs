//! Which local variables may be, and must be, initialised at given points of
//! a function: a reaching-definitions analysis over a control-flow graph
//! built from the [`Function`] model.
//!
//! The graph follows C as written: `if`, loops, `switch` with its `case`
//! labels, `break`, `continue`, `goto` (a computed `goto` may reach every
//! label), `return`, and the conditional evaluation inside `&&`, `||` and
//! `?:`. A definition is an initialised declaration or an assignment to
//! the variable itself (`=`, compound assignment, `++`, `--`); a declaration
//! without initialiser makes the variable indeterminate again each time it
//! runs, as its lifetime starts anew. `setjmp` and signal handlers are not
//! modelled.

use std::collections::HashMap;

use crate::frontend::{ForParts, Function, Jump, Label, NodeId, NodeKind};

/// The variables at one point.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Initialised {
    /// Initialised on some path from the function's entry.
    pub may: BitSet,
    /// Initialised on every path from the function's entry.
    pub must: BitSet,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BitSet(Vec<u64>);

impl BitSet {
    fn empty(n: usize) -> BitSet {
        BitSet(vec![0; n.div_ceil(64)])
    }

    fn full(n: usize) -> BitSet {
        let mut set = BitSet(vec![u64::MAX; n.div_ceil(64)]);
        if !n.is_multiple_of(64)
            && let Some(last) = set.0.last_mut()
        {
            *last = (1u64 << (n % 64)) - 1;
        }
        set
    }

    pub fn contains(&self, index: usize) -> bool {
        self.0
            .get(index / 64)
            .is_some_and(|word| word & (1 << (index % 64)) != 0)
    }

    fn insert(&mut self, index: usize) {
        self.0[index / 64] |= 1 << (index % 64);
    }

    fn remove(&mut self, index: usize) {
        self.0[index / 64] &= !(1 << (index % 64));
    }

    /// The effect of `op` on the initialised variables.
    fn apply(&mut self, op: Op) {
        match op {
            Op::Define(v) => self.insert(v),
            Op::Forget(v) => self.remove(v),
            Op::Point(_) => {}
        }
    }

    fn union_with(&mut self, other: &BitSet) {
        for (word, other) in self.0.iter_mut().zip(&other.0) {
            *word |= other;
        }
    }

    fn intersect_with(&mut self, other: &BitSet) {
        for (word, other) in self.0.iter_mut().zip(&other.0) {
            *word &= other;
        }
    }
}

#[derive(Debug, Clone, Copy)]
enum Op {
    Define(usize),
    Forget(usize),
    Point(usize),
}

#[derive(Debug, Default)]
struct Block {
    ops: Vec<Op>,
    successors: Vec<usize>,
}

struct Graph<'f> {
    function: &'f Function,
    /// Tracked variable index of a declaration key.
    tracked: &'f HashMap<usize, usize>,
    /// Point index of a node.
    points: &'f HashMap<NodeId, usize>,
    blocks: Vec<Block>,
    current: usize,
    exit: usize,
    /// (break target, continue target) of the enclosing loops and switches;
    /// a switch has no continue target of its own.
    jumps: Vec<(usize, Option<usize>)>,
    /// (switch head, whether a `default` was seen).
    switches: Vec<(usize, bool)>,
    labels: HashMap<String, usize>,
    computed_gotos: Vec<usize>,
}

/// For each of `points` (nodes of `function`), which of `tracked` variables
/// (declaration key → index) may and must be initialised there. A point is
/// placed where its node's value is known and not yet stored: after an
/// assignment's operands, or after a declaration's initialiser.
pub fn initialised_at(
    function: &Function,
    tracked: &HashMap<usize, usize>,
    points: &[NodeId],
) -> Vec<Initialised> {
    let point_index: HashMap<NodeId, usize> =
        points.iter().enumerate().map(|(i, &id)| (id, i)).collect();
    let mut graph = Graph {
        function,
        tracked,
        points: &point_index,
        blocks: vec![Block::default(), Block::default()],
        current: 0,
        exit: 1,
        jumps: Vec::new(),
        switches: Vec::new(),
        labels: HashMap::new(),
        computed_gotos: Vec::new(),
    };
    graph.visit(function.body);
    let (current, exit) = (graph.current, graph.exit);
    graph.edge(current, exit);
    let label_blocks: Vec<usize> = graph.labels.values().copied().collect();
    for source in std::mem::take(&mut graph.computed_gotos) {
        for &label in &label_blocks {
            graph.edge(source, label);
        }
    }
    solve(&graph.blocks, tracked.len(), points.len())
}

impl Graph<'_> {
    fn new_block(&mut self) -> usize {
        self.blocks.push(Block::default());
        self.blocks.len() - 1
    }

    fn edge(&mut self, from: usize, to: usize) {
        self.blocks[from].successors.push(to);
    }

    /// Ends the current block with a jump to `to`; what follows is
    /// reachable only through labels.
    fn jump(&mut self, to: usize) {
        self.edge(self.current, to);
        self.current = self.new_block();
    }

    fn op(&mut self, op: Op) {
        let current = self.current;
        self.blocks[current].ops.push(op);
    }

    fn point(&mut self, id: NodeId) {
        if let Some(&index) = self.points.get(&id) {
            self.op(Op::Point(index));
        }
    }

    fn label_block(&mut self, name: &str) -> usize {
        if let Some(&block) = self.labels.get(name) {
            return block;
        }
        let block = self.new_block();
        self.labels.insert(name.to_owned(), block);
        block
    }

    /// The tracked variable `id` names, seen through parentheses.
    fn assigned_variable(&self, id: NodeId) -> Option<usize> {
        match self.function.node(self.function.strip_parens(id)).kind {
            NodeKind::VarRef(key) => self.tracked.get(&key).copied(),
            _ => None,
        }
    }

    fn visit_all(&mut self, children: &[NodeId]) {
        for &child in children {
            self.visit(child);
        }
    }

    /// Adds the effects of node `id` to the graph. Recursive: the caller
    /// gives the instrumenter a deep stack.
    fn visit(&mut self, id: NodeId) {
        let function = self.function;
        let node = function.node(id);
        if !node.evaluated {
            return;
        }
        let children = node.children.as_slice();
        match &node.kind {
            NodeKind::If => {
                let Some((&condition, branches)) = children.split_first() else {
                    return;
                };
                let join = self.new_block();
                let (then, otherwise) = (self.new_block(), self.new_block());
                self.branch(condition, then, otherwise);
                self.current = then;
                if let Some(&branch) = branches.first() {
                    self.visit(branch);
                }
                self.edge(self.current, join);
                self.current = otherwise;
                if let Some(&branch) = branches.get(1) {
                    self.visit(branch);
                }
                self.edge(self.current, join);
                self.current = join;
            }
            NodeKind::While => {
                let [condition, body] = children else {
                    return self.visit_all(children);
                };
                let head = self.new_block();
                self.edge(self.current, head);
                self.current = head;
                let (start, exit) = (self.new_block(), self.new_block());
                self.branch(*condition, start, exit);
                self.loop_body(*body, start, exit, head);
                self.current = exit;
            }
            NodeKind::Do => {
                let [body, condition] = children else {
                    return self.visit_all(children);
                };
                let (start, test, exit) = (self.new_block(), self.new_block(), self.new_block());
                self.edge(self.current, start);
                self.loop_body(*body, start, exit, test);
                self.current = test;
                self.branch(*condition, start, exit);
                self.current = exit;
            }
            NodeKind::For { .. } => {
                let Some(ForParts {
                    init,
                    condition,
                    step,
                    body,
                }) = function.for_parts(id)
                else {
                    return;
                };
                if let Some(init) = init {
                    self.visit(init);
                }
                let head = self.new_block();
                self.edge(self.current, head);
                self.current = head;
                let (start, next, exit) = (self.new_block(), self.new_block(), self.new_block());
                match condition {
                    Some(condition) => self.branch(condition, start, exit),
                    None => self.edge(self.current, start),
                }
                self.loop_body(body, start, exit, next);
                self.current = next;
                if let Some(step) = step {
                    self.visit(step);
                }
                self.edge(self.current, head);
                self.current = exit;
            }
            NodeKind::Switch => {
                let Some((&body, scrutinee)) = children.split_last() else {
                    return;
                };
                self.visit_all(scrutinee);
                let head = self.current;
                let exit = self.new_block();
                self.switches.push((head, false));
                self.jumps.push((exit, None));
                self.current = self.new_block();
                self.visit(body);
                self.edge(self.current, exit);
                self.jumps.pop();
                if let Some((head, has_default)) = self.switches.pop()
                    && !has_default
                {
                    self.edge(head, exit);
                }
                self.current = exit;
            }
            NodeKind::Labelled(label) => {
                let block = match label {
                    Label::Named(name) => self.label_block(name),
                    Label::Case | Label::Default => {
                        let block = self.new_block();
                        if let Some((head, has_default)) = self.switches.last_mut() {
                            *has_default |= *label == Label::Default;
                            let head = *head;
                            self.edge(head, block);
                        }
                        block
                    }
                };
                self.edge(self.current, block);
                self.current = block;
                if let Some(&statement) = children.last() {
                    self.visit(statement);
                }
            }
            NodeKind::Jump(jump) => {
                let target = match jump {
                    Jump::Break => self.jumps.last().map(|&(target, _)| target),
                    Jump::Continue => self.jumps.iter().rev().find_map(|&(_, next)| next),
                    Jump::Goto(name) => Some(self.label_block(name)),
                    Jump::Computed => {
                        self.visit_all(children);
                        self.computed_gotos.push(self.current);
                        None
                    }
                };
                match target {
                    Some(target) => self.jump(target),
                    None => self.current = self.new_block(),
                }
            }
            NodeKind::Return => {
                self.visit_all(children);
                self.jump(self.exit);
            }
            NodeKind::Decl { key, initialised } => {
                let variable = self.tracked.get(key).copied();
                if *initialised {
                    self.visit_all(children);
                    self.point(id);
                    if let Some(variable) = variable {
                        self.op(Op::Define(variable));
                    }
                } else if let Some(variable) = variable {
                    self.op(Op::Forget(variable));
                }
            }
            NodeKind::Binary(op) if op == "&&" || op == "||" => {
                let join = self.new_block();
                self.branch(id, join, join);
                self.current = join;
            }
            NodeKind::Conditional => {
                let Some((&condition, arms)) = children.split_first() else {
                    return;
                };
                let join = self.new_block();
                if let [then, otherwise] = arms {
                    let (start_then, start_else) = (self.new_block(), self.new_block());
                    self.branch(condition, start_then, start_else);
                    for (start, arm) in [(start_then, then), (start_else, otherwise)] {
                        self.current = start;
                        self.visit(*arm);
                        self.edge(self.current, join);
                    }
                } else {
                    // `a ?: b`: the value of `a`, or else `b`.
                    let start_else = self.new_block();
                    self.branch(condition, join, start_else);
                    self.current = start_else;
                    self.visit_all(arms);
                    self.edge(self.current, join);
                }
                self.current = join;
            }
            NodeKind::Binary(op) if is_assignment(op) => {
                let [target, value] = children else {
                    return self.visit_all(children);
                };
                self.visit(*value);
                let variable = self.assigned_variable(*target);
                if variable.is_none() {
                    self.visit(*target);
                }
                self.point(id);
                if let Some(variable) = variable {
                    self.op(Op::Define(variable));
                }
            }
            NodeKind::Unary(op) if op == "++" || op == "--" => {
                let variable = children.first().and_then(|&c| self.assigned_variable(c));
                if variable.is_none() {
                    self.visit_all(children);
                }
                self.point(id);
                if let Some(variable) = variable {
                    self.op(Op::Define(variable));
                }
            }
            NodeKind::Opaque => {}
            _ => self.visit_all(children),
        }
    }

    /// Evaluates condition `id` from the current block and continues at
    /// `on_true` or `on_false`, following the short circuits of `&&`,
    /// `||` and `!` as C does.
    fn branch(&mut self, id: NodeId, on_true: usize, on_false: usize) {
        let function = self.function;
        let node = function.node(id);
        match (&node.kind, node.children.as_slice()) {
            (NodeKind::Paren | NodeKind::Implicit, [only]) => self.branch(*only, on_true, on_false),
            (NodeKind::Unary(op), [only]) if op == "!" => self.branch(*only, on_false, on_true),
            (NodeKind::Binary(op), [left, right]) if op == "&&" || op == "||" => {
                let middle = self.new_block();
                if op == "&&" {
                    self.branch(*left, middle, on_false);
                } else {
                    self.branch(*left, on_true, middle);
                }
                self.current = middle;
                self.branch(*right, on_true, on_false);
            }
            _ => {
                self.visit(id);
                self.edge(self.current, on_true);
                if on_false != on_true {
                    self.edge(self.current, on_false);
                }
            }
        }
    }

    fn loop_body(&mut self, body: NodeId, start: usize, exit: usize, next: usize) {
        self.jumps.push((exit, Some(next)));
        self.current = start;
        self.visit(body);
        self.edge(self.current, next);
        self.jumps.pop();
    }
}

/// `=` and the compound assignments.
pub fn is_assignment(op: &str) -> bool {
    matches!(
        op,
        "=" | "+=" | "-=" | "*=" | "/=" | "%=" | "<<=" | ">>=" | "&=" | "^=" | "|="
    )
}

/// Forward may (union) and must (intersection) analyses to a fixed point,
/// then the sets at each point.
fn solve(blocks: &[Block], n_variables: usize, n_points: usize) -> Vec<Initialised> {
    let n = blocks.len();
    let mut predecessors: Vec<Vec<usize>> = vec![Vec::new(); n];
    for (from, block) in blocks.iter().enumerate() {
        for &to in &block.successors {
            predecessors[to].push(from);
        }
    }
    let transfer = |block: &Block, set: &mut BitSet| {
        for &op in &block.ops {
            set.apply(op);
        }
    };
    // Entry (block 0) starts with nothing initialised. For `must`, every
    // other block starts optimistic (everything) and only shrinks.
    let mut may_out: Vec<BitSet> = vec![BitSet::empty(n_variables); n];
    let mut must_out: Vec<BitSet> = vec![BitSet::full(n_variables); n];
    let entry_in = |block: usize, out: &[BitSet], union: bool| -> BitSet {
        if block == 0 {
            return BitSet::empty(n_variables);
        }
        let mut set = if union {
            BitSet::empty(n_variables)
        } else {
            BitSet::full(n_variables)
        };
        for &pred in &predecessors[block] {
            if union {
                set.union_with(&out[pred]);
            } else {
                set.intersect_with(&out[pred]);
            }
        }
        set
    };
    let mut changed = true;
    while changed {
        changed = false;
        for block in 0..n {
            let mut may = entry_in(block, &may_out, true);
            transfer(&blocks[block], &mut may);
            if may != may_out[block] {
                may_out[block] = may;
                changed = true;
            }
            let mut must = entry_in(block, &must_out, false);
            transfer(&blocks[block], &mut must);
            if must != must_out[block] {
                must_out[block] = must;
                changed = true;
            }
        }
    }
    let mut result = vec![
        Initialised {
            may: BitSet::empty(n_variables),
            must: BitSet::empty(n_variables),
        };
        n_points
    ];
    for (index, block) in blocks.iter().enumerate() {
        let mut may = entry_in(index, &may_out, true);
        let mut must = entry_in(index, &must_out, false);
        for &op in &block.ops {
            if let Op::Point(p) = op {
                result[p] = Initialised {
                    may: may.clone(),
                    must: must.clone(),
                };
            }
            may.apply(op);
            must.apply(op);
        }
    }
    result
}
