//! Builds the [`Unit`] model with libclang, loaded at run time (`clang-sys`
//! feature `runtime`), from gcc's own preprocessed file.
//!
//! clang cannot read gcc's `.i` for glibc as it is (frontend-scout.md §7.2):
//! it lacks gcc's `_FloatN` builtin types and rejects the arguments of gcc
//! 11's `__malloc__(deallocator)` attribute. The analysis copy therefore
//! starts with a typedef prelude (whose length is subtracted from every
//! offset) and blanks those arguments with spaces, so offsets into the copy
//! are offsets into the real `.i`.

use std::collections::HashSet;

use clang::{
    Clang, Entity, EntityKind, EvaluationResult, Index, Linkage, StorageClass, Type, TypeKind,
    Unsaved,
};

use super::{
    Call, Function, Jump, Label, Node, NodeId, NodeKind, Storage, TypeClass, Unit, ValueType,
    Variable,
};
use crate::preprocessed::{skip_trivia, tokens};

/// Flags of the real compile that change what the code means to a C front
/// end (type sizes, signedness, language version, inline semantics).
pub fn type_affecting_flags(cc1_args: &[String]) -> Vec<String> {
    const EXACT: [&str; 12] = [
        "-funsigned-char",
        "-fsigned-char",
        "-m32",
        "-m64",
        "-mx32",
        "-fshort-enums",
        "-fno-short-enums",
        "-fshort-wchar",
        "-fms-extensions",
        "-fgnu89-inline",
        "-fno-gnu89-inline",
        "-ansi",
    ];
    cc1_args
        .iter()
        .filter(|arg| EXACT.contains(&arg.as_str()) || arg.starts_with("-std="))
        .cloned()
        .collect()
}

/// Whether `extern inline` means gcc's old semantics for these flags.
fn gnu89_inline(flags: &[String]) -> bool {
    let mut gnu89 = false;
    for flag in flags {
        match flag.as_str() {
            "-fgnu89-inline" => gnu89 = true,
            "-fno-gnu89-inline" => gnu89 = false,
            "-ansi"
            | "-std=c89"
            | "-std=c90"
            | "-std=gnu89"
            | "-std=gnu90"
            | "-std=iso9899:1990"
            | "-std=iso9899:199409" => gnu89 = true,
            other if other.starts_with("-std=") => gnu89 = false,
            _ => {}
        }
    }
    gnu89
}

#[derive(Debug, thiserror::Error)]
pub enum FrontendError {
    #[error(
        "cannot load libclang ({0}); install it (Debian/Ubuntu: apt-get install libclang1-14, \
         or any libclang 14 or later) or point LIBCLANG_PATH at the folder holding libclang.so"
    )]
    NoLibclang(String),
    #[error("libclang could not parse the file: {0}")]
    Parse(String),
}

/// Parses `text` (a gcc `.i`) and builds its model. Runs on a thread with a
/// large stack: clang's parser recurses on deeply nested code.
pub fn analyse(text: &[u8], flags: &[String]) -> Result<Unit, FrontendError> {
    std::thread::scope(|scope| {
        std::thread::Builder::new()
            .name("libclang".into())
            .stack_size(512 << 20)
            .spawn_scoped(scope, || analyse_here(text, flags))
            .map_err(|err| {
                FrontendError::Parse(format!("cannot start the analysis thread: {err}"))
            })?
            .join()
            .unwrap_or_else(|_| Err(FrontendError::Parse("the analysis thread panicked".into())))
    })
}

fn analyse_here(text: &[u8], flags: &[String]) -> Result<Unit, FrontendError> {
    let clang = Clang::new().map_err(FrontendError::NoLibclang)?;
    let index = Index::new(&clang, false, false);
    let m32 = flags.iter().any(|flag| flag == "-m32" || flag == "-mx32");
    let prelude = format!(
        "typedef float _Float32; typedef double _Float64; typedef double _Float32x; \
         typedef long double _Float64x; typedef {} _Float128;\n",
        if m32 { "long double" } else { "__float128" }
    );
    let copy = analysis_copy(&prelude, text);
    let mut arguments: Vec<String> = vec![
        "-x".into(),
        "cpp-output".into(),
        // No warnings but the two that say a static function is never
        // referenced (outline.rs: such a function keeps gcc's warning).
        "-Wno-everything".into(),
        "-Wunused-function".into(),
        "-Wunneeded-internal-declaration".into(),
        "-ferror-limit=0".into(),
        "-Wno-error=implicit-function-declaration".into(),
        "-Wno-error=int-conversion".into(),
        "-Wno-error=incompatible-function-pointer-types".into(),
        // gcc lets a file-scope object take a library function's name
        // (`unsigned char exp[4];`, one warning); clang, knowing `exp` as
        // a builtin, keeps calling it a function and rejects its uses.
        // No builtin library functions: every name means what the code
        // declares (`__builtin_*` stay known).
        "-fno-builtin".into(),
    ];
    // gcc accepts C23 `[[attributes]]` in every C mode (gnulib uses them);
    // clang before 17 only when asked.
    if libclang_major(&clang::get_version()).is_some_and(|major| major < 17) {
        arguments.push("-fdouble-square-bracket-attributes".into());
    }
    arguments.extend(
        flags
            .iter()
            .filter(|flag| !flag.contains("gnu89-inline"))
            .cloned(),
    );
    let name = "sampler-input.i";
    let tu = index
        .parser(name)
        .arguments(&arguments)
        .unsaved(&[Unsaved::new(name, &copy)])
        .parse()
        .map_err(|err| FrontendError::Parse(err.to_string()))?;

    let shift = prelude.len();
    let mut unit = Unit::default();
    // Where clang says a static function is never referenced (or only
    // where it need not be emitted): at the name in its definition.
    let mut unreferenced: HashSet<usize> = HashSet::new();
    for diagnostic in tu.get_diagnostics() {
        let offset = diagnostic.get_location().get_file_location().offset as usize;
        let offset = offset.saturating_sub(shift);
        match diagnostic.get_severity() {
            clang::diagnostic::Severity::Warning => {
                unreferenced.insert(offset);
            }
            severity if severity >= clang::diagnostic::Severity::Error => {
                unit.errors.push((offset, diagnostic.get_text()));
            }
            _ => {}
        }
    }
    // After an error clang warns about no unused declaration at all.
    let references_known = unit.errors.is_empty();
    let builder = Builder {
        text,
        shift,
        gnu89: gnu89_inline(flags),
    };
    let mut no_instrument: HashSet<String> = HashSet::new();
    let mut attributed: HashSet<String> = HashSet::new();
    let mut global_keys: HashSet<usize> = HashSet::new();
    // Globals with external linkage some declaration of which defines them
    // here: `int g;`, `int g = 1;`, `extern int g = 1;`, not `extern int g;`.
    let mut defined_external: HashSet<usize> = HashSet::new();
    // Extents of the static assertions inside function bodies.
    let mut static_asserts: Vec<(usize, usize)> = Vec::new();
    for entity in tu.get_entity().get_children() {
        if entity.get_kind() == EntityKind::VarDecl {
            if let Some(global) = builder.variable(&entity, Storage::Global, usize::MAX) {
                if entity.get_linkage() == Some(Linkage::External)
                    && (entity.get_storage_class() != Some(StorageClass::Extern)
                        || entity.is_definition())
                {
                    defined_external.insert(global.key);
                }
                if global_keys.insert(global.key) {
                    unit.globals.push(global);
                }
            }
            continue;
        }
        if entity.get_kind() != EntityKind::FunctionDecl {
            continue;
        }
        let Some((start, end)) = builder.extent(&entity) else {
            continue;
        };
        let Some(name) = entity.get_name() else {
            continue;
        };
        let body = entity
            .get_children()
            .into_iter()
            .find(|c| c.get_kind() == EntityKind::CompoundStmt);
        let header_end = match &body {
            Some(body) => builder
                .extent(body)
                .map_or(end, |(body_start, _)| body_start),
            None => end,
        };
        let header = &text[start..header_end.max(start)];
        if contains(header, b"no_instrument_function") {
            no_instrument.insert(name.clone());
        }
        // A false positive (the word in a parameter's name) only costs
        // the function its outlined SLOW copy.
        if [&b"__attribute"[..], b"_Noreturn", b"[[", b"__declspec"]
            .iter()
            .any(|word| contains(header, word))
        {
            attributed.insert(name.clone());
        }
        let Some(body) = body else { continue };
        let name_offset = entity
            .get_location()
            .map(|location| location.get_file_location().offset as usize)
            .map_or(start, |offset| offset.saturating_sub(shift));
        let is_extern = entity.get_storage_class() == Some(StorageClass::Extern);
        // Also a definition without `static` after a static declaration.
        let is_static = entity.get_linkage() == Some(Linkage::Internal);
        let gnu_extern_inline = entity.is_inline_function()
            && is_extern
            && (builder.gnu89 || contains(header, b"gnu_inline"));
        let parameters: Vec<Entity<'_>> = entity
            .get_children()
            .into_iter()
            .filter(|child| child.get_kind() == EntityKind::ParmDecl)
            .collect();
        let tag_in_parameters = parameters.iter().any(|param| {
            param
                .get_type()
                .is_some_and(|ty| builder.tag_declared_within(ty, (start, header_end)))
        });
        let mut locals: Vec<Variable> = parameters
            .iter()
            .filter_map(|param| builder.variable(param, Storage::Parameter, end))
            .collect();
        let (nodes, body_id) = builder.function_body(body, &mut locals, &mut static_asserts);
        unit.functions.push(Function {
            no_instrument: no_instrument.contains(&name),
            attributed: attributed.contains(&name),
            returns_void: entity
                .get_result_type()
                .is_some_and(|ty| ty.get_canonical_type().get_kind() == TypeKind::Void),
            variadic: entity.is_variadic(),
            name,
            start,
            name_offset,
            end,
            gnu_extern_inline,
            tag_in_parameters,
            maybe_unreferenced: is_static
                && (!references_known || unreferenced.contains(&name_offset)),
            body: body_id,
            nodes,
            locals,
        });
    }
    for global in &mut unit.globals {
        global.defined_external = defined_external.contains(&global.key);
    }
    // A static assertion is gcc's to judge and has no run-time code:
    // sampler-cc leaves it as written. clang rejects some that gcc accepts
    // (`_Static_assert(__builtin_add_overflow_p(INT_MAX, 1, (int) 0), "")`:
    // a gcc builtin clang lacks, so not a constant for clang), which must
    // not cost the function its instrumentation.
    unit.errors.retain(|(at, _)| {
        !static_asserts
            .iter()
            .any(|&(start, end)| (start..end).contains(at))
    });
    Ok(unit)
}

/// 14 from "Debian clang version 14.0.6".
fn libclang_major(version: &str) -> Option<u32> {
    let after = version.split("version ").nth(1)?;
    after.split('.').next()?.trim().parse().ok()
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack
        .windows(needle.len())
        .any(|window| window == needle)
}

/// The text libclang parses: `prelude` then `text` with the same offsets,
/// gcc-only attribute arguments blanked, bytes that are not UTF-8 (which
/// libclang's API cannot take) made `?`, and NUL bytes made spaces.
fn analysis_copy(prelude: &str, text: &[u8]) -> String {
    let mut bytes = text.to_vec();
    for byte in bytes.iter_mut() {
        if *byte == 0 {
            *byte = b' ';
        }
    }
    let needle = b"__malloc__";
    let mut from = 0;
    while let Some(at) = bytes[from..]
        .windows(needle.len())
        .position(|w| w == needle)
    {
        let after = from + at + needle.len();
        let open = skip_trivia(&bytes, after);
        if bytes.get(open) == Some(&b'(') {
            let mut depth = 0usize;
            let mut close = open;
            while close < bytes.len() {
                match bytes[close] {
                    b'(' => depth += 1,
                    b')' => {
                        depth -= 1;
                        if depth == 0 {
                            break;
                        }
                    }
                    _ => {}
                }
                close += 1;
            }
            let last = close.min(bytes.len() - 1);
            for byte in &mut bytes[open..=last] {
                if *byte != b'\n' {
                    *byte = b' ';
                }
            }
        }
        from = after;
    }
    let mut copy = String::with_capacity(prelude.len() + bytes.len());
    copy.push_str(prelude);
    let mut rest = bytes.as_slice();
    loop {
        match std::str::from_utf8(rest) {
            Ok(valid) => {
                copy.push_str(valid);
                break;
            }
            Err(err) => {
                let (valid, after) = rest.split_at(err.valid_up_to());
                // The prefix was just checked: this cannot fail.
                copy.push_str(std::str::from_utf8(valid).unwrap_or_default());
                let bad = err.error_len().unwrap_or(after.len());
                copy.extend(std::iter::repeat_n('?', bad));
                rest = &after[bad..];
            }
        }
    }
    copy
}

struct Builder<'t> {
    text: &'t [u8],
    shift: usize,
    gnu89: bool,
}

/// What a child is to its parent.
#[derive(Clone, Copy)]
struct Role {
    statement: bool,
    evaluated: bool,
    condition: bool,
}

impl Builder<'_> {
    /// Offset of an entity's name (its location) in the real `.i`.
    fn location(&self, entity: &Entity<'_>) -> Option<usize> {
        let offset = entity.get_location()?.get_file_location().offset as usize;
        offset.checked_sub(self.shift)
    }

    /// The key of the variable a declaration declares: the location of its
    /// first declaration.
    fn variable_key(&self, entity: &Entity<'_>) -> Option<usize> {
        self.location(&entity.get_canonical_entity())
    }

    fn variable(
        &self,
        entity: &Entity<'_>,
        storage: Storage,
        scope_end: usize,
    ) -> Option<Variable> {
        let name = entity.get_name()?;
        let storage_class = entity.get_storage_class();
        let key = self.variable_key(entity)?;
        Some(Variable {
            name,
            key,
            declared_at: self.location(entity).unwrap_or(key),
            ty: value_type(entity.get_type()?),
            storage: match (storage, storage_class) {
                (Storage::Local, Some(StorageClass::Static)) => Storage::StaticLocal,
                (storage, _) => storage,
            },
            scope_end,
            register: storage_class == Some(StorageClass::Register),
            thread_local: entity.get_tls_kind().is_some(),
            defined_external: false,
        })
    }

    /// Whether `ty`, through pointers, arrays and function types, names a
    /// `struct`, `union` or `enum` whose first declaration lies within
    /// `extent` of the real `.i` (a function's declarator).
    fn tag_declared_within(&self, ty: Type<'_>, (from, to): (usize, usize)) -> bool {
        let mut pending = vec![ty];
        // Bounded: a type nests as deep as its spelling.
        while let Some(ty) = pending.pop() {
            let ty = ty.get_canonical_type();
            if let Some(inner) = ty.get_pointee_type().or_else(|| ty.get_element_type()) {
                pending.push(inner);
            }
            if let Some(result) = ty.get_result_type() {
                pending.push(result);
                pending.extend(ty.get_argument_types().unwrap_or_default());
            }
            let first = ty
                .get_declaration()
                .map(|declaration| declaration.get_canonical_entity())
                .and_then(|declaration| declaration.get_location());
            if let Some(location) = first {
                let at = (location.get_file_location().offset as usize).checked_sub(self.shift);
                if at.is_some_and(|at| (from..to).contains(&at)) {
                    return true;
                }
            }
        }
        false
    }

    /// Byte extent in the real `.i`; `None` for the prelude or no location.
    fn extent(&self, entity: &Entity<'_>) -> Option<(usize, usize)> {
        let range = entity.get_range()?;
        let start = range.get_start().get_file_location().offset as usize;
        let end = range.get_end().get_file_location().offset as usize;
        let start = start.checked_sub(self.shift)?;
        let end = end.checked_sub(self.shift)?.max(start);
        Some((start, end.min(self.text.len())))
    }

    /// The body as an arena in pre-order (node 0 is the body), built
    /// without recursion: bodies nest thousands deep in generated code.
    fn function_body(
        &self,
        body: Entity<'_>,
        locals: &mut Vec<Variable>,
        static_asserts: &mut Vec<(usize, usize)>,
    ) -> (Vec<Node>, NodeId) {
        let mut nodes: Vec<Node> = Vec::new();
        let root = Role {
            statement: true,
            evaluated: true,
            condition: false,
        };
        let mut stack: Vec<(Entity<'_>, Option<NodeId>, Role)> = vec![(body, None, root)];
        while let Some((entity, parent, role)) = stack.pop() {
            let Some((start, end)) = self.extent(&entity) else {
                continue;
            };
            if entity.get_kind() == EntityKind::StaticAssert {
                static_asserts.push((start, end));
            }
            let children = entity.get_children();
            let extents: Vec<Option<(usize, usize)>> =
                children.iter().map(|c| self.extent(c)).collect();
            let kind = self.kind(&entity, start, end, &extents);
            let constant = role.condition && is_integer_constant(&entity);
            let ty = match &kind {
                NodeKind::VarRef(_)
                | NodeKind::Member { .. }
                | NodeKind::Subscript { .. }
                | NodeKind::Decl { .. } => entity.get_type().map(value_type),
                NodeKind::Unary(op) if op == "*" => entity.get_type().map(value_type),
                _ => None,
            };
            if entity.get_kind() == EntityKind::VarDecl
                && entity.get_storage_class() != Some(StorageClass::Extern)
            {
                // Scoped by the innermost block or `for` holding it.
                let mut scope = parent;
                while let Some(id) = scope {
                    if matches!(nodes[id].kind, NodeKind::Compound | NodeKind::For { .. }) {
                        break;
                    }
                    scope = nodes[id].parent;
                }
                let scope_end = scope.map_or(end, |id| nodes[id].end);
                if let Some(local) = self.variable(&entity, Storage::Local, scope_end) {
                    locals.push(local);
                }
            }
            let id = nodes.len();
            nodes.push(Node {
                kind,
                start,
                end,
                children: Vec::new(),
                parent,
                is_statement: role.statement,
                evaluated: role.evaluated,
                condition: role.condition,
                constant,
                ty,
            });
            if let Some(parent) = parent {
                nodes[parent].children.push(id);
            }
            let roles = self.child_roles(&nodes[id], &children, &extents);
            for (child, child_role) in children.into_iter().zip(roles).rev() {
                let child_role = Role {
                    evaluated: child_role.evaluated && role.evaluated,
                    ..child_role
                };
                stack.push((child, Some(id), child_role));
            }
        }
        (nodes, 0)
    }

    fn kind(
        &self,
        entity: &Entity<'_>,
        start: usize,
        end: usize,
        children: &[Option<(usize, usize)>],
    ) -> NodeKind {
        match entity.get_kind() {
            EntityKind::CompoundStmt => NodeKind::Compound,
            EntityKind::IfStmt => NodeKind::If,
            EntityKind::WhileStmt => NodeKind::While,
            EntityKind::DoStmt => NodeKind::Do,
            EntityKind::ForStmt => NodeKind::For {
                first_semicolon: self.for_semicolons(start, end).0,
            },
            EntityKind::SwitchStmt => NodeKind::Switch,
            EntityKind::CaseStmt => NodeKind::Labelled(Label::Case),
            EntityKind::DefaultStmt => NodeKind::Labelled(Label::Default),
            EntityKind::LabelStmt => {
                NodeKind::Labelled(Label::Named(entity.get_name().unwrap_or_default()))
            }
            EntityKind::ReturnStmt => NodeKind::Return,
            EntityKind::BreakStmt => NodeKind::Jump(Jump::Break),
            EntityKind::ContinueStmt => NodeKind::Jump(Jump::Continue),
            EntityKind::GotoStmt => NodeKind::Jump(Jump::Goto(
                entity
                    .get_children()
                    .first()
                    .and_then(|label| label.get_name())
                    .unwrap_or_default(),
            )),
            EntityKind::IndirectGotoStmt => NodeKind::Jump(Jump::Computed),
            EntityKind::DeclRefExpr => match entity.get_reference() {
                Some(var)
                    if matches!(var.get_kind(), EntityKind::VarDecl | EntityKind::ParmDecl) =>
                {
                    self.variable_key(&var)
                        .map_or(NodeKind::Expr, NodeKind::VarRef)
                }
                _ => NodeKind::Expr,
            },
            EntityKind::MemberRefExpr => {
                let base_end = children.first().copied().flatten().map(|(_, e)| e);
                NodeKind::Member {
                    arrow: base_end
                        .is_some_and(|e| self.operator_at(skip_trivia(self.text, e)) == "->"),
                    bit_field: entity
                        .get_reference()
                        .is_some_and(|field| field.is_bit_field()),
                }
            }
            EntityKind::ArraySubscriptExpr => NodeKind::Subscript {
                array_base: entity
                    .get_children()
                    .first()
                    .is_some_and(|base| is_array_lvalue(base)),
            },
            EntityKind::IntegerLiteral | EntityKind::CharacterLiteral => match entity.evaluate() {
                Some(EvaluationResult::SignedInteger(value)) => {
                    NodeKind::IntegerLiteral(i128::from(value))
                }
                Some(EvaluationResult::UnsignedInteger(value)) => {
                    NodeKind::IntegerLiteral(i128::from(value))
                }
                _ => NodeKind::Expr,
            },
            EntityKind::AsmStmt | EntityKind::MsAsmStmt | EntityKind::StaticAssert => {
                NodeKind::Opaque
            }
            EntityKind::UnaryExpr | EntityKind::GenericSelectionExpr => NodeKind::Opaque,
            EntityKind::TypedefDecl
            | EntityKind::StructDecl
            | EntityKind::UnionDecl
            | EntityKind::EnumDecl
            | EntityKind::FunctionDecl => NodeKind::Opaque,
            EntityKind::VarDecl => match entity.get_storage_class() {
                Some(StorageClass::Static | StorageClass::Extern) => NodeKind::Opaque,
                _ => match self.variable_key(entity) {
                    Some(key) => NodeKind::Decl {
                        key,
                        initialised: self.has_initialiser(entity, start, children),
                    },
                    None => NodeKind::Statement,
                },
            },
            EntityKind::StmtExpr => NodeKind::StmtExpr,
            EntityKind::CallExpr => NodeKind::Call(self.call(entity)),
            EntityKind::BinaryOperator | EntityKind::CompoundAssignOperator => {
                let lhs_end = children
                    .first()
                    .copied()
                    .flatten()
                    .map_or(start, |(_, e)| e);
                NodeKind::Binary(self.operator_at(skip_trivia(self.text, lhs_end)))
            }
            EntityKind::UnaryOperator => {
                let child = children.first().copied().flatten();
                match child {
                    Some((child_start, _)) if child_start > start => {
                        NodeKind::Unary(self.operator_at(start))
                    }
                    Some((_, child_end)) => {
                        NodeKind::Unary(self.operator_at(skip_trivia(self.text, child_end)))
                    }
                    None => NodeKind::Expr,
                }
            }
            EntityKind::ConditionalOperator => NodeKind::Conditional,
            EntityKind::ParenExpr => NodeKind::Paren,
            kind if entity.is_expression() || kind == EntityKind::UnexposedExpr => match children {
                [Some(only)] if *only == (start, end) => NodeKind::Implicit,
                _ => NodeKind::Expr,
            },
            _ if entity.is_statement() => NodeKind::Statement,
            _ => NodeKind::Opaque,
        }
    }

    fn call(&self, entity: &Entity<'_>) -> Call {
        let callee = entity
            .get_reference()
            .filter(|callee| callee.get_kind() == EntityKind::FunctionDecl);
        let direct = callee.and_then(|callee| callee.get_name());
        // clang declares an undeclared callee where it is called.
        let implicit = callee
            .and_then(|callee| self.location(&callee.get_canonical_entity()))
            .zip(self.extent(entity))
            .is_some_and(|(declared, (start, end))| start <= declared && declared < end);
        let discrete_result = entity.get_type().is_some_and(|ty| {
            let canonical = ty.get_canonical_type();
            canonical.is_integer()
                || matches!(canonical.get_kind(), TypeKind::Enum | TypeKind::Pointer)
        });
        Call {
            direct,
            implicit,
            discrete_result,
            n_arguments: entity
                .get_arguments()
                .map_or(0, |arguments| arguments.len()),
        }
    }

    /// The operator token at `offset`.
    fn operator_at(&self, offset: usize) -> String {
        const OPERATORS: [&str; 40] = [
            "<<=", ">>=", "...", "->", "++", "--", "<<", ">>", "<=", ">=", "==", "!=", "&&", "||",
            "*=", "/=", "%=", "+=", "-=", "&=", "^=", "|=", "+", "-", "*", "/", "%", "<", ">", "&",
            "|", "^", "!", "~", "=", ",", "?", ":", "__real__", "__imag__",
        ];
        let rest = &self.text[offset.min(self.text.len())..];
        OPERATORS
            .iter()
            .find(|op| rest.starts_with(op.as_bytes()))
            .map_or_else(|| "?".to_owned(), |op| (*op).to_owned())
    }

    fn child_roles(
        &self,
        node: &Node,
        children: &[Entity<'_>],
        extents: &[Option<(usize, usize)>],
    ) -> Vec<Role> {
        let plain = Role {
            statement: false,
            evaluated: true,
            condition: false,
        };
        let statement = Role {
            statement: true,
            ..plain
        };
        let condition = Role {
            condition: true,
            ..plain
        };
        let opaque = Role {
            evaluated: false,
            ..plain
        };
        let n = children.len();
        let mut roles = vec![plain; n];
        let last = n.saturating_sub(1);
        match &node.kind {
            NodeKind::Compound => roles.fill(statement),
            NodeKind::If => {
                for (index, role) in roles.iter_mut().enumerate() {
                    *role = if index == 0 { condition } else { statement };
                }
            }
            NodeKind::While | NodeKind::Switch => {
                roles.fill(statement);
                if let Some(first) = roles.first_mut() {
                    *first = if node.kind == NodeKind::While {
                        condition
                    } else {
                        plain
                    };
                }
            }
            NodeKind::Do => {
                roles.fill(condition);
                if let Some(first) = roles.first_mut() {
                    *first = statement;
                }
            }
            NodeKind::For { .. } => {
                let (first_semi, second_semi) = self.for_semicolons(node.start, node.end);
                for (index, role) in roles.iter_mut().enumerate() {
                    let start = extents[index].map_or(0, |(s, _)| s);
                    *role = if index == last {
                        statement
                    } else if start > first_semi && start < second_semi {
                        condition
                    } else {
                        plain
                    };
                }
            }
            NodeKind::Labelled(_) => {
                for (index, role) in roles.iter_mut().enumerate() {
                    *role = if index == last { statement } else { opaque };
                }
            }
            NodeKind::Conditional => {
                if let Some(first) = roles.first_mut() {
                    *first = condition;
                }
            }
            NodeKind::Binary(op) if op == "&&" || op == "||" => roles.fill(condition),
            NodeKind::Unary(op) if op == "!" && node.condition => roles.fill(condition),
            NodeKind::Paren | NodeKind::Implicit if node.condition => roles.fill(condition),
            NodeKind::Opaque => roles.fill(opaque),
            NodeKind::Call(call) => {
                const UNEVALUATED_ARGUMENTS: [&str; 4] = [
                    "__builtin_constant_p",
                    "__builtin_object_size",
                    "__builtin_dynamic_object_size",
                    "__builtin_classify_type",
                ];
                if call
                    .direct
                    .as_deref()
                    .is_some_and(|name| UNEVALUATED_ARGUMENTS.contains(&name))
                {
                    roles.fill(opaque);
                }
            }
            NodeKind::Decl { initialised, .. } => {
                // Only the initialiser runs; other children belong to the
                // declarator's type (`typeof`, array sizes).
                roles.fill(opaque);
                if *initialised {
                    roles[last] = plain;
                }
            }
            _ => {}
        }
        roles
    }

    /// Whether a variable declaration has an initialiser: its last child
    /// follows an `=` after the name.
    fn has_initialiser(
        &self,
        entity: &Entity<'_>,
        start: usize,
        children: &[Option<(usize, usize)>],
    ) -> bool {
        let name_end = self.location(entity).unwrap_or(start);
        matches!(children.last(), Some(Some((child_start, _)))
            if *child_start > name_end && contains(&self.text[name_end..*child_start], b"="))
    }

    /// Offsets of the two `;` of a `for (init; cond; inc)` header.
    fn for_semicolons(&self, start: usize, end: usize) -> (usize, usize) {
        let text = &self.text[..end];
        let mut offset = start;
        while offset < end && text[offset] != b'(' {
            offset += 1;
        }
        let mut depth = 0usize;
        let mut found = Vec::with_capacity(2);
        for (token, _) in tokens(text, offset, end) {
            match text[token] {
                b'(' | b'[' | b'{' => depth += 1,
                b')' | b']' | b'}' => depth = depth.saturating_sub(1),
                b';' if depth == 1 => found.push(token),
                _ => {}
            }
            if found.len() == 2 {
                break;
            }
        }
        (
            found.first().copied().unwrap_or(end),
            found.get(1).copied().unwrap_or(end),
        )
    }
}

/// The model's view of a type.
fn value_type(ty: Type<'_>) -> ValueType {
    let canonical = ty.get_canonical_type();
    let class = match canonical.get_kind() {
        TypeKind::Bool
        | TypeKind::CharU
        | TypeKind::UChar
        | TypeKind::UShort
        | TypeKind::UInt
        | TypeKind::ULong
        | TypeKind::ULongLong
        | TypeKind::UInt128
        | TypeKind::Char16
        | TypeKind::Char32 => TypeClass::UnsignedInteger,
        TypeKind::CharS
        | TypeKind::SChar
        | TypeKind::Short
        | TypeKind::Int
        | TypeKind::Long
        | TypeKind::LongLong
        | TypeKind::Int128
        | TypeKind::WChar => TypeClass::SignedInteger,
        TypeKind::Enum => TypeClass::Enum,
        TypeKind::Pointer => TypeClass::Pointer,
        TypeKind::Float | TypeKind::Double | TypeKind::LongDouble => TypeClass::Float,
        _ => TypeClass::Other,
    };
    let spelling = unqualified(&canonical.get_display_name());
    let key = match canonical.get_pointee_type() {
        // The pointee keeps its qualifiers: `const char *` is not `char *`.
        Some(pointee) if class == TypeClass::Pointer => {
            format!("{} *", pointee.get_canonical_type().get_display_name())
        }
        _ => spelling.clone(),
    };
    ValueType {
        key,
        spelling,
        class,
        bits: canonical.get_sizeof().map_or(0, |bytes| bytes as u32 * 8),
        is_const: canonical.is_const_qualified(),
        is_volatile: canonical.is_volatile_qualified(),
    }
}

/// A type's spelling without its top-level qualifiers (leading ones for
/// plain types, trailing ones for pointers: the leading `const` of
/// `const char *` qualifies the pointee and stays).
fn unqualified(spelling: &str) -> String {
    const QUALIFIERS: [&str; 4] = ["const", "volatile", "restrict", "__restrict"];
    let mut text = spelling.trim();
    let pointer = text.contains('*');
    loop {
        let before = text;
        for qualifier in QUALIFIERS {
            if !pointer
                && let Some(rest) = text.strip_prefix(qualifier)
                && rest.starts_with(' ')
            {
                text = rest.trim_start();
            }
            if let Some(rest) = text.strip_suffix(qualifier)
                && (rest.ends_with(' ') || rest.ends_with('*'))
            {
                text = rest.trim_end();
            }
        }
        if text == before {
            return text.to_owned();
        }
    }
}

/// An array-typed expression under its conversion to a pointer.
fn is_array_lvalue(entity: &Entity<'_>) -> bool {
    let mut current = *entity;
    loop {
        let is_array = current.get_type().is_some_and(|ty| {
            matches!(
                ty.get_canonical_type().get_kind(),
                TypeKind::ConstantArray
                    | TypeKind::IncompleteArray
                    | TypeKind::VariableArray
                    | TypeKind::DependentSizedArray
            )
        });
        if is_array {
            return true;
        }
        let children = current.get_children();
        match (current.get_kind(), children.as_slice()) {
            (EntityKind::UnexposedExpr | EntityKind::ParenExpr, [only]) => current = *only,
            _ => return false,
        }
    }
}

fn is_integer_constant(entity: &Entity<'_>) -> bool {
    matches!(
        entity.evaluate(),
        Some(EvaluationResult::SignedInteger(_) | EvaluationResult::UnsignedInteger(_))
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn analysis_copy_keeps_offsets() {
        let text = b"void f(void) __attribute__ ((__malloc__ (fclose, 1)));\xff\0x";
        let copy = analysis_copy("P;", text);
        assert_eq!(copy.len(), 2 + text.len());
        assert_eq!(
            &copy[2..],
            format!(
                "void f(void) __attribute__ ((__malloc__{}));? x",
                " ".repeat(12)
            )
        );
    }

    #[test]
    fn libclang_versions() {
        assert_eq!(libclang_major("Debian clang version 14.0.6"), Some(14));
        assert_eq!(libclang_major("clang version 19.1.7 (3~deb12u1)"), Some(19));
        assert_eq!(libclang_major("unknown"), None);
    }

    #[test]
    fn gnu89_follows_the_last_flag() {
        let flags = |list: &[&str]| list.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert!(gnu89_inline(&flags(&["-std=gnu89"])));
        assert!(!gnu89_inline(&flags(&["-std=gnu89", "-std=gnu11"])));
        assert!(gnu89_inline(&flags(&["-std=c11", "-fgnu89-inline"])));
        assert!(!gnu89_inline(&flags(&[])));
    }
}
