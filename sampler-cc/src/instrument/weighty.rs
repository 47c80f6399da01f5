//! Which calls may consume the sampling countdown ("weighty" calls, as the
//! original called them). A cloned region's fast copy assumes that no site
//! runs between its check and its end; a call that may run sites (or jump
//! out and come back) must end the region.
//!
//! A call is weighty when its callee
//! - is defined in the unit and has sites, or calls a weighty function
//!   (to a fixed point over the unit's call graph);
//! - is called through a pointer;
//! - is external and not known to be weightless. The C and math libraries'
//!   functions are weightless (read from the system's `libc.so.6` and
//!   `libm.so.6`, as the original captured them with `nm`), except those
//!   that call back into the program or jump: `qsort`, `bsearch`, `exit`,
//!   `setjmp`, `longjmp`, ... (the original meant to list these, but its
//!   pattern never matched). Compiler builtins are weightless.

use std::collections::{HashMap, HashSet};
use std::sync::OnceLock;

use crate::frontend::{Call, NodeKind, Unit};

/// C library functions that run program code (callbacks, handlers, atexit
/// functions, signal handlers) or return more than once or not normally.
const CALLS_BACK: &[&str] = &[
    "qsort",
    "qsort_r",
    "bsearch",
    "lfind",
    "lsearch",
    "tsearch",
    "tfind",
    "tdelete",
    "twalk",
    "twalk_r",
    "tdestroy",
    "ftw",
    "ftw64",
    "nftw",
    "nftw64",
    "scandir",
    "scandir64",
    "scandirat",
    "scandirat64",
    "glob",
    "glob64",
    "dl_iterate_phdr",
    "pthread_once",
    "call_once",
    "pthread_exit",
    "exit",
    "quick_exit",
    "raise",
    "kill",
    "abort",
    "fork",
    "vfork",
    "__libc_start_main",
    "getcontext",
    "setcontext",
    "swapcontext",
    "makecontext",
];

/// Functions after which a region's cached countdown would be stale or
/// wrong: they return twice (a `longjmp` back lands after them with the
/// local countdown's value indeterminate). A function calling one of these
/// is never cloned.
pub(super) const RETURNS_TWICE: &[&str] = &[
    "setjmp",
    "_setjmp",
    "__setjmp",
    "sigsetjmp",
    "__sigsetjmp",
    "savectx",
    "vfork",
    "getcontext",
];

/// Non-local jumps: never weightless.
const JUMPS: &[&str] = &["longjmp", "_longjmp", "siglongjmp", "__longjmp_chk"];

/// The functions exported by the C and math libraries, minus those that
/// call back or jump; read once per process.
fn library_weightless() -> &'static HashSet<String> {
    static SET: OnceLock<HashSet<String>> = OnceLock::new();
    SET.get_or_init(|| {
        let mut names = HashSet::new();
        for library in ["libc.so.6", "libm.so.6"] {
            if let Some(path) = find_library(library) {
                read_exported_functions(&path, &mut names);
            }
        }
        for name in CALLS_BACK.iter().chain(RETURNS_TWICE).chain(JUMPS) {
            names.remove(*name);
        }
        names
    })
}

fn find_library(name: &str) -> Option<std::path::PathBuf> {
    let multiarch = format!("{}-linux-gnu", std::env::consts::ARCH);
    [
        format!("/lib/{multiarch}"),
        format!("/usr/lib/{multiarch}"),
        "/lib64".to_owned(),
        "/usr/lib64".to_owned(),
        "/lib".to_owned(),
        "/usr/lib".to_owned(),
    ]
    .iter()
    .map(|dir| std::path::Path::new(dir).join(name))
    .find(|path| path.is_file())
}

/// Adds the names of the functions `path` exports. An unreadable library
/// adds nothing: its functions are then weighty, which is only slower.
fn read_exported_functions(path: &std::path::Path, names: &mut HashSet<String>) {
    use object::{Object, ObjectSymbol, SymbolKind};
    let Ok(data) = std::fs::read(path) else {
        return;
    };
    let Ok(file) = object::File::parse(&*data) else {
        return;
    };
    for symbol in file.dynamic_symbols() {
        // `strlen` and friends are GNU indirect functions, which `object`
        // does not count as definitions: defined is "not undefined".
        if symbol.kind() == SymbolKind::Text
            && !symbol.is_undefined()
            && symbol.is_global()
            && let Ok(name) = symbol.name()
        {
            names.insert(name.to_owned());
        }
    }
}

/// Whether a call to external function `name` (not defined in the unit) may
/// run sites.
pub(super) fn is_weighty_external(name: &str) -> bool {
    if name.starts_with("__builtin_")
        || name.starts_with("__atomic_")
        || name.starts_with("__sync_")
    {
        return JUMPS.iter().any(|jump| name.ends_with(jump));
    }
    !library_weightless().contains(name)
}

/// Which calls of one unit are weighty.
pub(super) struct Weighty<'u> {
    /// The functions the unit defines.
    defined: HashSet<&'u str>,
    /// Those of them that have sites or call a weighty function.
    weighty: HashSet<&'u str>,
}

impl<'u> Weighty<'u> {
    /// Works out the unit's weighty functions: those defined in the unit
    /// that have sites (`has_sites`) or call a weighty function, to a
    /// fixed point over the unit's call graph.
    pub(super) fn new(unit: &'u Unit, has_sites: &HashSet<&str>) -> Self {
        let defined: HashSet<&str> = unit.functions.iter().map(|f| f.name.as_str()).collect();
        let mut classes = Weighty {
            defined,
            weighty: HashSet::new(),
        };
        // Callers of each defined function, and the functions weighty on
        // their own (sites, calls through pointers, weighty externals).
        let mut callers: HashMap<&str, Vec<&str>> = HashMap::new();
        let mut work = Vec::new();
        for function in &unit.functions {
            let name = function.name.as_str();
            let mut own = has_sites.contains(name);
            for node in &function.nodes {
                let NodeKind::Call(call) = &node.kind else {
                    continue;
                };
                if !node.evaluated {
                    continue;
                }
                match call.direct.as_deref() {
                    Some(callee) if classes.defined.contains(callee) => {
                        callers.entry(callee).or_default().push(name);
                    }
                    _ => own |= classes.is_weighty(call),
                }
            }
            if own && classes.weighty.insert(name) {
                work.push(name);
            }
        }
        while let Some(callee) = work.pop() {
            for &caller in callers.get(callee).map(Vec::as_slice).unwrap_or_default() {
                if classes.weighty.insert(caller) {
                    work.push(caller);
                }
            }
        }
        classes
    }

    /// Whether `call` may run sites: through a pointer, to a weighty
    /// function of the unit, or to an external not known to be weightless.
    pub(super) fn is_weighty(&self, call: &Call) -> bool {
        match call.direct.as_deref() {
            None => true,
            Some(name) if self.defined.contains(name) => self.weighty.contains(name),
            Some(name) => is_weighty_external(name),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn libc_functions_are_weightless_unless_they_call_back() {
        // Debian's libc exports these; CI runs on Debian.
        assert!(!is_weighty_external("memcpy"));
        assert!(!is_weighty_external("strlen"));
        assert!(!is_weighty_external("printf"));
        assert!(!is_weighty_external("sqrt"));
        assert!(!is_weighty_external("__builtin_memcpy"));
        assert!(is_weighty_external("qsort"));
        assert!(is_weighty_external("bsearch"));
        assert!(is_weighty_external("exit"));
        assert!(is_weighty_external("longjmp"));
        assert!(is_weighty_external("__builtin_longjmp"));
        assert!(is_weighty_external("g_object_unref"));
        assert!(is_weighty_external("some_library_function"));
    }
}
