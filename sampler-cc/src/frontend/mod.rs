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
    /// Variables declared at file scope, in the order of their first
    /// declaration.
    pub globals: Vec<Variable>,
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
    /// Some declaration of it in the unit carries attributes
    /// (`__attribute__`, `_Noreturn`, `[[...]]`, `__declspec`), as the
    /// declarations' text spells them: `noreturn`, `target`, `section`
    /// and the like, which a copy of its body under another name would
    /// not have.
    pub attributed: bool,
    /// A parameter's type names a `struct`, `union` or `enum` first
    /// declared in the parameter list itself (gcc warns that it is not
    /// visible outside): another function with that parameter list has
    /// another type.
    pub tag_in_parameters: bool,
    /// Static, and either referenced nowhere else in the unit or in a
    /// unit where libclang found errors (it then says nothing of
    /// references): gcc may warn that it is unused (`-Wunused-function`),
    /// which a reference from code sampler-cc adds would silence.
    pub maybe_unreferenced: bool,
    /// Returns `void` (the canonical type, so also through a typedef).
    pub returns_void: bool,
    /// Takes a variable argument list (`...`).
    pub variadic: bool,
    /// Root of the body: always a [`NodeKind::Compound`], node 0.
    pub body: NodeId,
    pub nodes: Vec<Node>,
    /// Parameters in order, then the body's non-`extern` local variables
    /// in the order of their declarations.
    pub locals: Vec<Variable>,
}

/// A variable and what the assignment schemes need to know of it.
#[derive(Debug, Clone)]
pub struct Variable {
    pub name: String,
    /// Offset of the name in its (first) declaration: the key that
    /// [`NodeKind::VarRef`] and [`NodeKind::Decl`] refer to.
    pub key: usize,
    /// Offset of the name in the declaration that makes the variable
    /// visible to the code after it: for a global, its first file-scope
    /// declaration (a block-scope `extern int g;` in an earlier function,
    /// which may be the key, declares it for that block only: sqlite3's
    /// `sqlite3_search_count`); for a local, the key.
    pub declared_at: usize,
    pub ty: ValueType,
    pub storage: Storage,
    /// Locals: the end of the block that scopes the declaration.
    pub scope_end: usize,
    /// Declared `register`: its address cannot be taken.
    pub register: bool,
    /// `__thread` / `_Thread_local`: never shared between threads.
    pub thread_local: bool,
    /// Globals: has external linkage and this unit defines it (a
    /// definition or a tentative one, not only `extern` declarations), so
    /// the program has it whether or not anything reads it.
    pub defined_external: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Storage {
    Global,
    Parameter,
    /// An automatic (or `register`) local.
    Local,
    /// A `static` local: initialised before the program starts.
    StaticLocal,
}

/// The type of a variable or an lvalue.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ValueType {
    /// The canonical type without its top-level qualifiers: two values are
    /// compared only when their keys are equal.
    pub key: String,
    /// The canonical type without top-level qualifiers, as C.
    pub spelling: String,
    pub class: TypeClass,
    /// Size in bits (0 when unknown).
    pub bits: u32,
    pub is_const: bool,
    pub is_volatile: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TypeClass {
    SignedInteger,
    /// Includes `_Bool`.
    UnsignedInteger,
    Enum,
    Pointer,
    /// `float`, `double`, `long double`.
    Float,
    Other,
}

impl TypeClass {
    /// Integers, enums and pointers.
    pub fn is_discrete(self) -> bool {
        matches!(
            self,
            TypeClass::SignedInteger
                | TypeClass::UnsignedInteger
                | TypeClass::Enum
                | TypeClass::Pointer
        )
    }
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
    /// The type of an lvalue or a declared variable (only computed for
    /// [`NodeKind::VarRef`], [`NodeKind::Member`], [`NodeKind::Subscript`],
    /// `*` and [`NodeKind::Decl`]).
    pub ty: Option<ValueType>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NodeKind {
    Compound,
    If,
    While,
    Do,
    /// `first_semicolon` splits the header's init part from the rest.
    For {
        first_semicolon: usize,
    },
    Switch,
    /// A `case`, `default` or named label with its statement.
    Labelled(Label),
    Return,
    Jump(Jump),
    /// The declaration of a local variable (keyed as [`Variable::key`]);
    /// its only evaluated child is the initialiser, if any.
    Decl {
        key: usize,
        initialised: bool,
    },
    /// A use of a variable (keyed as [`Variable::key`]).
    VarRef(usize),
    /// `base.field` or `base->field`.
    Member {
        arrow: bool,
        bit_field: bool,
    },
    /// `base[index]`; `array_base` when the base is an array (not a pointer).
    Subscript {
        array_base: bool,
    },
    /// An integer literal or character constant and its value.
    IntegerLiteral(i128),
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
pub enum Label {
    Case,
    Default,
    Named(String),
}

/// `for (init; condition; step) body`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ForParts {
    pub init: Option<NodeId>,
    pub condition: Option<NodeId>,
    pub step: Option<NodeId>,
    pub body: NodeId,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Jump {
    Break,
    Continue,
    Goto(String),
    /// `goto *p`: may reach any label.
    Computed,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Call {
    /// The called function, when the callee is a function's name.
    pub direct: Option<String>,
    /// The result is an integer, enum or pointer.
    pub discrete_result: bool,
    pub n_arguments: usize,
    /// The callee was not declared before: this call declares it
    /// implicitly (C89, or an old program), and gcc says so only here.
    pub implicit: bool,
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

    /// `id` without the parentheses and implicit conversions around it.
    pub fn strip_parens(&self, mut id: NodeId) -> NodeId {
        loop {
            let node = &self.nodes[id];
            match (&node.kind, node.children.as_slice()) {
                (NodeKind::Paren | NodeKind::Implicit, [only]) => id = *only,
                _ => return id,
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

    /// The parts of `for` statement `id`.
    pub fn for_parts(&self, id: NodeId) -> Option<ForParts> {
        let node = &self.nodes[id];
        let NodeKind::For { first_semicolon } = node.kind else {
            return None;
        };
        let (&body, header) = node.children.split_last()?;
        let init = header
            .iter()
            .copied()
            .find(|&c| self.nodes[c].start < first_semicolon);
        let condition = header.iter().copied().find(|&c| self.nodes[c].condition);
        let step = header
            .iter()
            .copied()
            .find(|&c| Some(c) != init && Some(c) != condition);
        Some(ForParts {
            init,
            condition,
            step,
            body,
        })
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
