//! The front-end-neutral model of a preprocessed unit: its function
//! definitions as trees of statements and expressions, with byte extents in
//! the `.i`. The schemes work on this model only; libclang is one way to
//! build it ([`libclang`]).

pub mod libclang;

/// Index of a node in its function's arena.
pub type NodeId = usize;

#[derive(Debug, Default)]
pub struct Unit {
    pub functions: Vec<Function>,
    /// Offsets (in the `.i`) of the errors the front end reported. A
    /// function containing one is left alone.
    pub errors: Vec<(usize, String)>,
}

#[derive(Debug)]
pub struct Function {
    pub name: String,
    /// Start of the definition (its declaration specifiers).
    pub start: usize,
    /// Offset of the function's name in its declarator.
    pub name_offset: usize,
    pub end: usize,
    /// A gcc "extern inline" definition (`gnu_inline`, or `extern inline`
    /// in gnu89 mode): only an inlining body, never emitted on its own.
    pub gnu_extern_inline: bool,
    /// `__attribute__((no_instrument_function))` on this or an earlier
    /// declaration.
    pub no_instrument: bool,
    /// Root of the body: always a [`NodeKind::Compound`], node 0.
    pub body: NodeId,
    pub nodes: Vec<Node>,
}

#[derive(Debug)]
pub struct Node {
    pub kind: NodeKind,
    pub start: usize,
    pub end: usize,
    pub children: Vec<NodeId>,
    pub parent: Option<NodeId>,
    /// In a statement position: a block item, a branch or loop body, the
    /// statement after a label.
    pub is_statement: bool,
    /// Evaluated when the statement runs. `false` inside `sizeof`,
    /// `_Generic`, `__builtin_constant_p`, declarator types and constant
    /// labels, where instrumentation would never count or could change
    /// meaning.
    pub evaluated: bool,
    /// Used as a truth value: the condition of `if`, a loop or `?:`, or an
    /// operand of `&&` / `||` (possibly under `!` and parentheses).
    pub condition: bool,
    /// An integer constant expression (only computed for conditions).
    pub constant: bool,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NodeKind {
    Compound,
    If,
    While,
    Do,
    For,
    Switch,
    /// `case`, `default` or a label with its statement.
    Labelled,
    Return,
    /// Any other statement: jumps, `;`, declarations, ...
    Statement,
    /// Something that holds no instrumentable code of its own (asm,
    /// type declarations, static initialisers).
    Opaque,
    StmtExpr,
    Call(Call),
    Binary(String),
    /// A prefix or postfix operator, such as `!`, `-`, `++`.
    Unary(String),
    Conditional,
    Paren,
    /// An expression the instrumenter sees through when it covers exactly
    /// its only child (implicit conversions).
    Implicit,
    Expr,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Call {
    /// The called function, when the callee is a function's name.
    pub direct: Option<String>,
    /// The result is an integer, enum or pointer.
    pub discrete_result: bool,
}

impl Function {
    pub fn node(&self, id: NodeId) -> &Node {
        &self.nodes[id]
    }

    /// The innermost statement holding `id` (the body for function-level
    /// nodes).
    pub fn enclosing_statement(&self, mut id: NodeId) -> NodeId {
        loop {
            let node = &self.nodes[id];
            if node.is_statement {
                return id;
            }
            match node.parent {
                Some(parent) => id = parent,
                None => return id,
            }
        }
    }

    /// `id` without parentheses, `!` and implicit conversions around it.
    pub fn strip_negations(&self, mut id: NodeId) -> NodeId {
        loop {
            let node = &self.nodes[id];
            let transparent = matches!(&node.kind, NodeKind::Paren | NodeKind::Implicit)
                || matches!(&node.kind, NodeKind::Unary(op) if op == "!");
            match (transparent, node.children.as_slice()) {
                (true, [only]) => id = *only,
                _ => return id,
            }
        }
    }

    /// Statement numbers: node 0 is the body; every other statement gets
    /// the next number in a pre-order walk of the body.
    pub fn statement_numbers(&self) -> Vec<u32> {
        let mut numbers = vec![0u32; self.nodes.len()];
        let mut next = 0u32;
        let mut stack = vec![self.body];
        while let Some(id) = stack.pop() {
            let node = &self.nodes[id];
            if node.is_statement || id == self.body {
                numbers[id] = next;
                next += 1;
            }
            stack.extend(node.children.iter().rev());
        }
        numbers
    }
}
