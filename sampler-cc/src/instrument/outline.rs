//! `-fsample-outlined-functions`: the SLOW copy of a function whose sites
//! all lie in one run of its whole body, in a function of its own.
//!
//! Such a function takes one event per call (a lone run, regions.rs). In
//! place of `{ if (TEST) { FAST } else { SLOW } }` it becomes
//!
//! ```c
//! static __attribute__((__noinline__, __cold__)) T F__cbi_slow(PARAMS);
//! T F(PARAMS) { if (__builtin_expect(--cbi_countdown < 0, 0)) return F__cbi_slow(ARGS); { FAST } }
//! static __attribute__((__noinline__, __cold__)) T F__cbi_slow(PARAMS)
//! { if (__builtin_expect(!cbi_sample(), 0)) { ++cbi_countdown; return F(ARGS); } { SLOW } }
//! ```
//!
//! so that `F` is about the size of the plain function again and gcc
//! inlines it where it inlines the plain one (the sqlite3 shell: 141 M of
//! its 1,204 M instructions were in 629 small functions that the two
//! copies had made too big to inline). The events, draws and observations
//! are those of the run's test, `--cbi_countdown >= 0 || !cbi_sample()`:
//! a draw that declines (a thread's first event, or one in a signal
//! handler that interrupted a draw) gives back the event `F` took, and
//! `F`, called again, takes it back and runs FAST. (Its own FAST copy in
//! `F__cbi_slow` cost sqlite3.c about 2% of its compile time and 15% of
//! its cold text.) The draw is in
//! the copy so that `F` stays within gcc's limit on inlining functions not
//! declared `inline` (`max-inline-insns-auto`, which `out2Prerelease` in
//! `sqlite3VdbeExec` exceeded with the call to `cbi_sample()` and its test
//! in `F`: the shell 1,136.3 M instructions that way, 1,121.6 M this
//! way).
//!
//! The call back reads every parameter and refers to `F`, which would
//! silence gcc's `-Wunused-parameter`, `-Wunused-but-set-parameter` and
//! `-Wunused-function`. A function whose body does not read each of its
//! parameters (as far as the front end can tell), a static function that
//! nothing else in the unit refers to (clang's `-Wunused-function` and
//! `-Wunneeded-internal-declaration`, or any static function in a unit
//! clang found errors in) and one with a parameter named `F` keep a FAST
//! copy in `F__cbi_slow` instead: `{ if (!cbi_sample()) { FAST } else {
//! SLOW } }`. Either copy is declared before `F` and defined after it, so
//! that gcc meets `F`'s declaration first and its warnings come in the
//! user's order.
//!
//! Diagnostics stay gcc's: `F__cbi_slow`'s parameter list, SLOW and
//! closing brace are at the user's lines and columns; `F`'s parameter
//! list and closing brace, FAST (both copies of it, where the copy keeps
//! one), the calls and `F__cbi_slow`'s own text are system-header text.
//! Warnings about the parameters (`-Wunused-parameter`, `-Wshadow`, ...), the body's
//! variables (`-Wunused-variable`, decided at the block's closing brace)
//! and at the closing brace (`-Wreturn-type`) then come once, from
//! `F__cbi_slow`, whose body is the user's; `F` reads every
//! parameter to pass it on. gcc names the function `F__cbi_slow` in the
//! "In function" line above them, and a backtrace through the SLOW copy
//! shows a frame `F__cbi_slow`, which the resolver reads as `F` (and
//! leaves out between two frames of `F` after a declined draw).
//!
//! Left as they are: `main` (it may fall off its end), functions whose
//! parameter list declares a tag (a `struct` first named there is a type
//! of that list alone: the copy's would be another), recursive
//! functions (the resolver could no longer tell the frame of `F` that
//! called the copy from a recursive caller once gcc makes that call a
//! tail call), variadic and non-static `inline`
//! functions, functions with attributes on any declaration (`noreturn`,
//! `target`, `section`: the copy would not have them), K&R and
//! unprototyped definitions, functions whose
//! declaration specifiers hold more than keywords, type names and `*`
//! (attributes, tag definitions) or whose declarator is not `NAME(...)`,
//! and functions that read their own frame (`__builtin_return_address`).

use crate::frontend::{Function, NodeKind, Storage};
use crate::preprocessed::{LineMap, identifier_end, skip_trivia, tokens};

/// The suffix of an outlined SLOW copy's name: `F__cbi_slow` holds `F`'s.
pub(super) const SLOW_SUFFIX: &str = "__cbi_slow";

/// The builtins whose value depends on the frame they run in.
const FRAME_BUILTINS: [&str; 6] = [
    "__builtin_return_address",
    "__builtin_frame_address",
    "__builtin_extract_return_addr",
    "__builtin_apply_args",
    "__builtin_va_arg_pack",
    "__builtin_va_arg_pack_len",
];

/// The predefined identifiers that name the function they are in: the
/// SLOW copy spells its function's name instead (every enabled `assert`
/// reads `__PRETTY_FUNCTION__`).
pub(super) const FUNCTION_NAMES: [&str; 3] = ["__func__", "__FUNCTION__", "__PRETTY_FUNCTION__"];

/// What outlining a function's SLOW copy needs from its text.
#[derive(Debug, PartialEq, Eq)]
pub(super) struct Outline {
    /// `F__cbi_slow`'s declaration specifiers: `F`'s but its storage
    /// class and `inline`, one line.
    pub specifiers: String,
    /// The parameter list, `(` to `)` included.
    pub parameters: (usize, usize),
    /// The call's arguments: the parameters' names, in order.
    pub arguments: Vec<String>,
    /// The body's closing brace.
    pub closing_brace: usize,
    /// The extents of `__func__` and its kin in the body, which SLOW
    /// replaces by the function's name as a string.
    pub function_names: Vec<(usize, usize)>,
    /// On a draw that declines, `F__cbi_slow` calls `F` again instead of
    /// holding a FAST copy of its own.
    pub reenters: bool,
    /// A K&R definition (only with [`Declarators::KAndR`]): where its
    /// parameters' declarations end, at the body.
    pub declarations_end: Option<usize>,
}

/// The definitions [`outline`] takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Declarators {
    /// Prototypes only: the copy's call back needs `F`'s prototype.
    Prototyped,
    /// K&R definitions too (`-fsample-warm-functions`, whose copies
    /// never call `F`): the copies repeat the parameters' declarations
    /// and are declared without a prototype.
    KAndR,
}

/// The outline of `function`'s SLOW copy, or why it has none.
pub(super) fn outline(
    function: &Function,
    text: &[u8],
    map: &LineMap,
    declarators: Declarators,
) -> Result<Outline, &'static str> {
    if function.name == "main" {
        return Err("main");
    }
    if function.variadic {
        return Err("variadic");
    }
    if function.attributed {
        return Err("attributes");
    }
    if function.tag_in_parameters {
        return Err("a tag declared in the parameters");
    }
    let name_end = function.name_offset + function.name.len();
    if text.get(function.name_offset..name_end) != Some(function.name.as_bytes()) {
        return Err("name not found");
    }
    let specifiers = specifiers(&text[function.start..function.name_offset])?;
    let open = skip_trivia(text, name_end);
    if text.get(open) != Some(&b'(') {
        return Err("declarator");
    }
    let close = matching_parenthesis(text, open).ok_or("declarator")?;
    let body = function.node(function.body);
    let declarations_end = if skip_trivia(text, close + 1) == body.start {
        None
    } else if declarators == Declarators::KAndR
        && !function.attributed
        && k_and_r_declarations(text, close + 1, body.start)
    {
        Some(body.start)
    } else {
        return Err("K&R definition or attributes");
    };
    let closing_brace = body.end.checked_sub(1).ok_or("body")?;
    if text.get(closing_brace) != Some(&b'}') {
        return Err("body");
    }
    if !map.markers_between(open, close + 1).is_empty() {
        return Err("line marker in the parameters");
    }
    let arguments: Vec<String> = function
        .locals
        .iter()
        .filter(|v| v.storage == Storage::Parameter)
        .map(|v| v.name.clone())
        .collect();
    let mut inside = tokens(text, open + 1, close).map(|(start, end)| &text[start..end]);
    let declared = match (inside.next(), inside.next()) {
        (None, _) => return Err("unprototyped"),
        (Some(b"void"), None) => 0,
        _ => top_level_commas(text, open + 1, close) + 1,
    };
    if declared != arguments.len() || arguments.iter().any(String::is_empty) {
        return Err("unnamed parameter");
    }
    let mut function_names = Vec::new();
    for (start, token_end) in identifiers(text, body.start, body.end) {
        let token = &text[start..token_end];
        if token == function.name.as_bytes() {
            return Err("recursive");
        }
        if FRAME_BUILTINS.iter().any(|b| b.as_bytes() == token) {
            return Err("reads its frame");
        }
        if FUNCTION_NAMES.iter().any(|n| n.as_bytes() == token) {
            function_names.push((start, token_end));
        }
    }
    // `F__cbi_slow` calls `F` by its name, which must then be neither a
    // parameter's nor the only reference that keeps gcc from warning that
    // `F` is unused; and the call reads every parameter, which must then
    // be read already (or gcc would no longer warn that it is unused, or
    // set but not used).
    let reenters = !function.maybe_unreferenced
        && !arguments.contains(&function.name)
        && function
            .locals
            .iter()
            .filter(|v| v.storage == Storage::Parameter)
            .all(|parameter| is_read(function, parameter.key));
    Ok(Outline {
        specifiers,
        parameters: (open, close + 1),
        arguments,
        closing_brace,
        function_names,
        reenters,
        declarations_end,
    })
}

/// Whether `text[start..end]`, between a definition's parameter list and
/// its body, is only the parameters' declarations: it ends with `;`, and
/// holds no `__attribute__`, `asm` or brackets of an attribute list.
fn k_and_r_declarations(text: &[u8], start: usize, end: usize) -> bool {
    let mut previous: &[u8] = b"";
    for (token, token_end) in tokens(text, start, end) {
        let word = &text[token..token_end];
        let attribute = matches!(
            word,
            b"__attribute__" | b"__attribute" | b"__asm__" | b"asm" | b"__asm"
        ) || (word == b"[" && previous == b"[");
        if attribute {
            return false;
        }
        previous = word;
    }
    previous == b";"
}

/// Whether `function`'s body reads the variable keyed `key`: a use of it,
/// evaluated, converted to its value (where gcc also counts a read). Not
/// `(void)p`, `&p`, `p.field` or a store, which gcc may also count: those
/// only cost a function its re-entry.
fn is_read(function: &Function, key: usize) -> bool {
    function.nodes.iter().any(|node| {
        node.kind == NodeKind::VarRef(key)
            && node.evaluated
            && node
                .parent
                .is_some_and(|parent| function.node(parent).kind == NodeKind::Implicit)
    })
}

/// `F__cbi_slow`'s declaration specifiers from `F`'s (`text`, up to the
/// name): keywords, type names and `*`, without `static`, `extern` and a
/// static function's `inline`.
fn specifiers(text: &[u8]) -> Result<String, &'static str> {
    let mut kept = Vec::new();
    let mut is_static = false;
    let mut inline = false;
    let mut at = 0;
    loop {
        at = skip_trivia(text, at);
        let Some(&byte) = text.get(at) else { break };
        if byte == b'*' {
            kept.push("*");
            at += 1;
            continue;
        }
        if !(byte == b'_' || byte.is_ascii_alphabetic()) {
            return Err("declaration specifiers");
        }
        let end = identifier_end(text, at);
        let word = std::str::from_utf8(&text[at..end]).map_err(|_| "declaration specifiers")?;
        match word {
            "static" => is_static = true,
            // `__extension__` only starts a declaration.
            "extern" | "__extension__" => {}
            "inline" | "__inline" | "__inline__" => inline = true,
            "_Noreturn" | "__attribute__" | "__attribute" | "__declspec" | "__asm__" | "asm"
            | "__asm" | "_Alignas" | "typeof" | "__typeof__" | "__typeof" => {
                return Err("declaration specifiers");
            }
            _ => kept.push(word),
        }
        at = end;
    }
    // A non-static inline definition may not call a static function.
    if inline && !is_static {
        return Err("inline");
    }
    // An implicit `int` (K&R style) is an error in later standards.
    if kept.is_empty() {
        return Err("no type specifier");
    }
    Ok(kept.join(" "))
}

/// The offset of the `)` that closes the `(` at `open`, outside comments
/// and literals; `None` at a `{`, `}` or `;` first.
fn matching_parenthesis(text: &[u8], open: usize) -> Option<usize> {
    let mut depth = 0usize;
    for (start, _) in tokens(text, open, text.len()) {
        match text[start] {
            b'(' => depth += 1,
            b')' => {
                depth -= 1;
                if depth == 0 {
                    return Some(start);
                }
            }
            b'{' | b'}' | b';' => return None,
            _ => {}
        }
    }
    None
}

/// The commas of a parameter list's text (`text[start..end]`) outside its
/// brackets, comments and literals.
fn top_level_commas(text: &[u8], start: usize, end: usize) -> usize {
    let mut depth = 0i32;
    let mut commas = 0;
    for (token, _) in tokens(text, start, end) {
        match text[token] {
            b'(' | b'[' | b'{' => depth += 1,
            b')' | b']' | b'}' => depth -= 1,
            b',' if depth == 0 => commas += 1,
            _ => {}
        }
    }
    commas
}

/// The identifiers (and keywords) among `text[start..end]`'s tokens.
fn identifiers(text: &[u8], start: usize, end: usize) -> impl Iterator<Item = (usize, usize)> + '_ {
    tokens(text, start, end).filter(|&(at, _)| text[at] == b'_' || text[at].is_ascii_alphabetic())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn specifiers_lose_their_storage_class_and_a_static_functions_inline() {
        assert_eq!(specifiers(b"static const char *").unwrap(), "const char *");
        assert_eq!(
            specifiers(b"static inline\nunsigned long ").unwrap(),
            "unsigned long"
        );
        assert_eq!(
            specifiers(b"extern struct node * ").unwrap(),
            "struct node *"
        );
        assert_eq!(specifiers(b"int ").unwrap(), "int");
        assert_eq!(
            specifiers(b"static __extension__ long long ").unwrap(),
            "long long"
        );
        assert_eq!(specifiers(b"static "), Err("no type specifier"));
        assert_eq!(specifiers(b"inline int "), Err("inline"));
        assert_eq!(
            specifiers(b"static __attribute__((unused)) int "),
            Err("declaration specifiers")
        );
        assert_eq!(
            specifiers(b"struct s { int a; } "),
            Err("declaration specifiers")
        );
        assert_eq!(
            specifiers(b"_Noreturn void "),
            Err("declaration specifiers")
        );
    }

    #[test]
    fn parameter_lists_are_counted_by_their_top_level_commas() {
        let commas = |text: &[u8]| top_level_commas(text, 0, text.len());
        assert_eq!(commas(b"int a"), 0);
        assert_eq!(commas(b"int (*f)(int, int), char a[2][3], int n"), 2);
        assert_eq!(
            commas(b"int a, /* the (size, in bytes) */ int n // it's n\n"),
            1
        );
        assert_eq!(commas(b"char c['(']"), 0);
        assert_eq!(matching_parenthesis(b"f(int (*g)(int)) {", 1), Some(15));
        assert_eq!(matching_parenthesis(b"f(int a; {", 1), None);
        assert_eq!(matching_parenthesis(b"f(int a /* a) b; */) {", 1), Some(19));
    }

    #[test]
    fn k_and_r_declarations_are_told_from_attributes() {
        let declared = |text: &[u8]| k_and_r_declarations(text, 0, text.len());
        assert!(declared(b" deflate_state *s; IPos cur_match; "));
        assert!(declared(b" int a[][3]; /* [[ */ char *p; "));
        assert!(!declared(b" __attribute__((cold)) "));
        assert!(!declared(b" int a; __attribute__((unused)) "));
        assert!(!declared(b" [[gnu::cold]] "));
        assert!(!declared(b" __asm__(\"f2\") "));
        assert!(!declared(b""));
    }

    #[test]
    fn identifiers_skip_literals_numbers_and_line_markers() {
        let text = b"x = \"__func__\" + 'a' + 0x1fu;\n# 3 \"f.c\"\n__func__ y";
        let found: Vec<&[u8]> = identifiers(text, 0, text.len())
            .map(|(s, e)| &text[s..e])
            .collect();
        assert_eq!(found, [&b"x"[..], b"__func__", b"y"]);
        let text = b"/* don't f */ g(1); // it's f\nf(2); /* a */";
        let found: Vec<&[u8]> = identifiers(text, 0, text.len())
            .map(|(s, e)| &text[s..e])
            .collect();
        assert_eq!(found, [&b"g"[..], b"f"]);
    }
}
