//! Absolute addresses of a backtrace to modules, then to functions, files
//! and lines.

use std::collections::HashMap;
use std::sync::Arc;

use super::debug_object::{DebugFiles, DebugObject, demangle, is_trampoline_name};
use super::parse::{LoadedModule, RawFrame};

/// One frame of a symbolized backtrace. A frame of the backtrace whose
/// address lies in inlined code gives several: the inlined functions
/// first (innermost first, `inlined` true), then the function that holds
/// the code.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SymbolizedFrame {
    /// The absolute address, as printed in the backtrace.
    pub address: u64,
    /// The object's path: from the `modules` subreport when the frame was
    /// matched to a module, else as printed in the backtrace.
    pub module: String,
    /// The object's GNU build id, from the `modules` subreport.
    pub build_id: Option<String>,
    /// The address looked up, relative to the object's load address
    /// (a file address): one less than the return address for the callers,
    /// so that the line is the call's and not the next statement's. `None`
    /// when the object's load address is unknown.
    pub module_offset: Option<u64>,
    /// The function, demangled when it is Rust or C++: from DWARF, else the
    /// symbol table, else the symbol glibc printed.
    pub function: Option<String>,
    /// The source file.
    pub file: Option<String>,
    /// The source line.
    pub line: Option<u32>,
    /// True for a function inlined into the next frame.
    pub inlined: bool,
}

/// Symbolizes `frames`, a crashed run's `main-backtrace`, with its
/// `modules` and the debugging information of `debug`.
///
/// Each frame is matched to a loaded module (see ARCHITECTURE.md): by the
/// load address glibc's `object(+0xoffset)` implies, by path, or by address
/// range (the module with the greatest load address at or below the
/// address whose file, when available, has a loadable segment there). The
/// runtime's own signal handler frames and the signal trampoline are left
/// out when they can be recognised; the frame after the trampoline is the
/// faulting instruction and is looked up exactly, every other frame being
/// a return address is looked up one byte earlier. Without a recognisable
/// trampoline every frame is kept and the first is taken as exact.
pub fn symbolize(
    frames: &[RawFrame],
    modules: &[LoadedModule],
    debug: &dyn DebugFiles,
) -> Vec<SymbolizedFrame> {
    let mut objects = Objects::new(modules, debug);
    let placed: Vec<Placed> = frames
        .iter()
        .map(|frame| place(frame, modules, &mut objects))
        .collect();
    let first = trampoline(frames, &placed).map_or(0, |index| index + 1);
    let mut symbolized = Vec::new();
    for (index, (frame, placed)) in frames.iter().zip(&placed).enumerate().skip(first) {
        emit(frame, placed, index == first, &mut symbolized);
    }
    merge_outlined_copies(&mut symbolized);
    symbolized
}

/// The suffixes of the functions sampler-cc outlines a function `F`'s
/// instrumented copies into: `F__cbi_slow` (`-fsample-outlined-functions`,
/// `-fsample-warm-functions`) and `F__cbi_whole` (`-fsample-warm-functions`).
const OUTLINED_SUFFIXES: [&str; 2] = ["__cbi_slow", "__cbi_whole"];

/// Reads the frames of sampler-cc's outlined SLOW copy of a function `F`
/// as `F`'s: `F__cbi_slow` (or its clone `F__cbi_slow.constprop.0`) is
/// named `F`, and the frame of `F` right after it, which called it on the
/// same call of `F` (outlined functions are never recursive), is left out.
/// When the copy's draw declines (a thread's first event), it calls `F`
/// again to run its FAST code: a frame of `F` right before the copy's is
/// that same call, so the copy's frame goes too. A crash is then the same
/// frames, and the same signature, whether or not its call of `F` was
/// sampled.
fn merge_outlined_copies(frames: &mut Vec<SymbolizedFrame>) {
    let mut index = 0;
    while index < frames.len() {
        let outlined = frames[index].function.as_deref().and_then(|name| {
            OUTLINED_SUFFIXES.iter().find_map(|suffix| {
                let at = name.find(suffix)?;
                let rest = &name[at + suffix.len()..];
                (at > 0 && is_clone_suffix(rest))
                    .then(|| (name[..at].to_owned(), format!("{}{rest}", &name[..at])))
            })
        });
        let Some((caller, renamed)) = outlined else {
            index += 1;
            continue;
        };
        let next = index + 1;
        let called_by_caller = !frames[index].inlined
            && frames.get(next).and_then(|f| f.function.as_deref()) == Some(caller.as_str());
        let reentered = index
            .checked_sub(1)
            .and_then(|before| frames[before].function.as_deref())
            .is_some_and(|name| {
                name.strip_prefix(caller.as_str())
                    .is_some_and(is_clone_suffix)
            });
        if reentered {
            // The frame of `F` inside stands for the call of `F` outside:
            // inlined into its caller as that one was.
            let end = if called_by_caller { next + 1 } else { next };
            frames[index - 1].inlined = frames[end - 1].inlined;
            frames.drain(index..end);
            continue;
        }
        frames[index].function = Some(renamed);
        if called_by_caller {
            frames.remove(next);
        }
        index += 1;
    }
}

/// What follows a function's name in the name of gcc's copy of it:
/// nothing, or a clone's suffix (`.constprop.0`, `.isra.0`).
fn is_clone_suffix(rest: &str) -> bool {
    rest.is_empty() || rest.starts_with('.')
}

/// Where a frame's address lies.
struct Placed {
    module: String,
    build_id: Option<String>,
    /// The exact address relative to the object's load address.
    offset: Option<u64>,
    object: Option<Arc<DebugObject>>,
}

/// The debugging files of modules, asked for once each.
struct Objects<'a> {
    debug: &'a dyn DebugFiles,
    modules: &'a [LoadedModule],
    by_module: HashMap<usize, Option<Arc<DebugObject>>>,
    by_path: HashMap<String, Option<Arc<DebugObject>>>,
}

impl<'a> Objects<'a> {
    fn new(modules: &'a [LoadedModule], debug: &'a dyn DebugFiles) -> Self {
        Self {
            debug,
            modules,
            by_module: HashMap::new(),
            by_path: HashMap::new(),
        }
    }

    fn of_module(&mut self, index: usize) -> Option<Arc<DebugObject>> {
        let (debug, module) = (self.debug, &self.modules[index]);
        self.by_module
            .entry(index)
            .or_insert_with(|| debug.find(module.build_id.as_deref(), &module.path))
            .clone()
    }

    fn of_path(&mut self, path: &str) -> Option<Arc<DebugObject>> {
        let debug = self.debug;
        self.by_path
            .entry(path.to_owned())
            .or_insert_with(|| debug.find(None, path))
            .clone()
    }
}

fn place(frame: &RawFrame, modules: &[LoadedModule], objects: &mut Objects<'_>) -> Placed {
    match find_module(frame, modules, objects) {
        Some(index) => {
            let module = &modules[index];
            let object = objects.of_module(index);
            let base = match &object {
                Some(object) if object.is_fixed_address() => 0,
                _ => module.load_address,
            };
            Placed {
                module: module.path.clone(),
                build_id: module.build_id.clone(),
                offset: frame.address.checked_sub(base),
                object,
            }
        }
        None => {
            let object = (!frame.object.is_empty())
                .then(|| objects.of_path(&frame.object))
                .flatten();
            let offset = match (&frame.symbol, frame.offset) {
                // `object(+0xoffset)`: relative to the load address.
                (None, Some(offset)) => Some(offset),
                // `object[0xaddress]`: glibc omits the parenthesis only
                // for a load address of 0.
                (None, None) if !frame.object.is_empty() => Some(frame.address),
                (Some(symbol), Some(offset)) => object
                    .as_ref()
                    .and_then(|object| object.symbol_address(symbol))
                    .and_then(|value| value.checked_add(offset)),
                _ => None,
            }
            .or_else(|| {
                object
                    .as_ref()
                    .filter(|object| object.is_fixed_address())
                    .map(|_| frame.address)
            });
            Placed {
                module: frame.object.clone(),
                build_id: None,
                offset,
                object,
            }
        }
    }
}

/// The index of the module holding `frame`'s address.
fn find_module(
    frame: &RawFrame,
    modules: &[LoadedModule],
    objects: &mut Objects<'_>,
) -> Option<usize> {
    if is_vdso(&frame.object) {
        // Not a file; the runtime does not list it.
        return None;
    }
    let address = frame.address;
    // `object(+0xoffset)`: glibc subtracted the load address itself.
    if frame.symbol.is_none()
        && let Some(load) = frame.offset.and_then(|offset| address.checked_sub(offset))
    {
        let at_load: Vec<usize> = (0..modules.len())
            .filter(|&index| modules[index].load_address == load)
            .collect();
        let by_path = at_load
            .iter()
            .find(|&&index| same_object(&frame.object, &modules[index].path));
        if let Some(&index) = by_path.or(at_load.first()) {
            return Some(index);
        }
    }
    let mut holds = |index: usize| {
        let offset = address - modules[index].load_address;
        objects.of_module(index).is_none_or(|object| {
            object.covers(if object.is_fixed_address() {
                address
            } else {
                offset
            })
        })
    };
    let mut below: Vec<usize> = (0..modules.len())
        .filter(|&index| modules[index].load_address <= address)
        .collect();
    below.sort_by_key(|&index| std::cmp::Reverse(modules[index].load_address));
    below
        .iter()
        .copied()
        .filter(|&index| same_object(&frame.object, &modules[index].path))
        .find(|&index| holds(index))
        .or_else(|| below.iter().copied().find(|&index| holds(index)))
}

/// True when `printed` (as `backtrace_symbols_fd` names an object: the
/// loader's path, or `argv[0]` for the main program) names the module
/// loaded from `path`.
fn same_object(printed: &str, path: &str) -> bool {
    if printed == path {
        return true;
    }
    if printed.is_empty() || printed.starts_with('/') {
        return false;
    }
    let mut relative = printed;
    while let Some(rest) = relative.strip_prefix("./") {
        relative = rest;
    }
    !relative.is_empty()
        && path
            .strip_suffix(relative)
            .is_some_and(|directory| directory.ends_with('/'))
}

fn file_name(path: &str) -> &str {
    path.rsplit('/').next().unwrap_or(path)
}

fn is_vdso(path: &str) -> bool {
    let name = file_name(path);
    name.starts_with("linux-vdso") || name.starts_with("linux-gate")
}

/// The C library, by file name: `libc.so.6`, `libc-2.31.so`, musl's
/// `libc.musl-x86_64.so.1`.
pub(crate) fn is_libc(path: &str) -> bool {
    let name = file_name(path);
    name.starts_with("libc.so")
        || name.starts_with("libc.musl")
        || (name.starts_with("libc-") && name.ends_with(".so"))
}

/// A function of the runtime: its C ABI (`cbi_*`) or a Rust function of
/// the `sampler_runtime` crate, mangled or not.
pub(crate) fn is_runtime_function(name: &str) -> bool {
    name.starts_with("cbi_")
        || name.contains("sampler_runtime::")
        || name.contains("15sampler_runtime")
}

pub(crate) fn is_runtime_object(path: &str) -> bool {
    file_name(path).starts_with("libsampler_runtime")
}

/// True when the frame is the runtime's: its object is the shared runtime,
/// or glibc's symbol or the function found for it belongs to the runtime
/// (the static runtime's functions are local symbols, which glibc does not
/// name).
fn is_runtime_frame(frame: &RawFrame, placed: &Placed) -> bool {
    if is_runtime_object(&frame.object) || is_runtime_object(&placed.module) {
        return true;
    }
    if frame.symbol.as_deref().is_some_and(is_runtime_function) {
        return true;
    }
    let (Some(object), Some(offset)) = (&placed.object, placed.offset) else {
        return false;
    };
    // A return address: the call is one byte earlier.
    object
        .lookup(offset.saturating_sub(1))
        .last()
        .and_then(|frame| frame.function.as_deref())
        .is_some_and(is_runtime_function)
}

/// True when the frame is, beyond doubt, a signal trampoline: named so,
/// or holding the `rt_sigreturn` code.
fn is_known_trampoline(frame: &RawFrame, placed: &Placed) -> bool {
    frame.symbol.as_deref().is_some_and(is_trampoline_name)
        || placed
            .object
            .as_ref()
            .zip(placed.offset)
            .is_some_and(|(object, offset)| object.is_signal_trampoline(offset))
}

/// The index of the signal trampoline that called the runtime's handler:
/// the frame after the runtime's leading frames when it is in the C
/// library (or the vDSO) or known to be a trampoline; else the first frame
/// known to be a trampoline (everything above a signal frame is the
/// handler's).
fn trampoline(frames: &[RawFrame], placed: &[Placed]) -> Option<usize> {
    let n_runtime = frames
        .iter()
        .zip(placed)
        .take_while(|(frame, placed)| is_runtime_frame(frame, placed))
        .count();
    if n_runtime > 0
        && let Some(frame) = frames.get(n_runtime)
    {
        let placed = &placed[n_runtime];
        if is_libc(&frame.object)
            || is_libc(&placed.module)
            || is_vdso(&frame.object)
            || is_known_trampoline(frame, placed)
        {
            return Some(n_runtime);
        }
    }
    frames
        .iter()
        .zip(placed)
        .position(|(frame, placed)| is_known_trampoline(frame, placed))
}

fn emit(frame: &RawFrame, placed: &Placed, exact: bool, out: &mut Vec<SymbolizedFrame>) {
    let probe = placed.offset.map(|offset| {
        if exact {
            offset
        } else {
            offset.saturating_sub(1)
        }
    });
    // glibc's symbol is that of the return address itself, which for a
    // call ending a function (`symbol+0x0`) is the next function.
    let printed = frame
        .symbol
        .as_deref()
        .filter(|_| exact || frame.offset != Some(0))
        .map(demangle);
    let found = match (&placed.object, probe) {
        (Some(object), Some(probe)) => object.lookup(probe),
        _ => Vec::new(),
    };
    let symbolized = |function, file, line, inlined| SymbolizedFrame {
        address: frame.address,
        module: placed.module.clone(),
        build_id: placed.build_id.clone(),
        module_offset: probe,
        function,
        file,
        line,
        inlined,
    };
    if found.is_empty() {
        out.push(symbolized(printed, None, None, false));
        return;
    }
    let last = found.len() - 1;
    for (index, source) in found.into_iter().enumerate() {
        let function = match source.function {
            None if index == last => printed.clone(),
            function => function,
        };
        out.push(symbolized(
            function,
            source.file,
            source.line,
            index != last,
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct NoFiles;

    impl DebugFiles for NoFiles {
        fn find(&self, _: Option<&str>, _: &str) -> Option<Arc<DebugObject>> {
            None
        }
    }

    const MODULES: &str = "0x56171bdfc000\t5b19\t/tmp/exp/prog\n\
        0x7fcff8769000\tbba5\t/tmp/exp/libcrash.so\n\
        0x7fcff8614000\tf7b5\t/tmp/exp/rt/libsampler_runtime.so\n\
        0x7fcff8429000\t93ac\t/lib/x86_64-linux-gnu/libc.so.6\n";

    /// What glibc 2.36 printed for a crash in a shared library, the
    /// runtime being shared too.
    const BACKTRACE: &str = "/tmp/exp/rt/libsampler_runtime.so(+0x2eb83)[0x7fcff8642b83]\n\
        /tmp/exp/rt/libsampler_runtime.so(+0x1c594)[0x7fcff8630594]\n\
        /tmp/exp/rt/libsampler_runtime.so(+0x1c6d5)[0x7fcff86306d5]\n\
        /lib/x86_64-linux-gnu/libc.so.6(+0x3c050)[0x7fcff8465050]\n\
        /tmp/exp/libcrash.so(lib_store+0x12)[0x7fcff876a11b]\n\
        /tmp/exp/libcrash.so(lib_helper+0x1d)[0x7fcff876a13d]\n\
        ./prog(+0x11a0)[0x56171bdfd1a0]\n\
        renamed[0x56171bdfd1ec]\n\
        /lib/x86_64-linux-gnu/libc.so.6(+0x2724a)[0x7fcff845024a]\n\
        /lib/x86_64-linux-gnu/libc.so.6(__libc_start_main+0x85)[0x7fcff8450305]\n\
        ./prog(+0x1091)[0x56171bdfd091]\n";

    fn frame(
        address: u64,
        module: &str,
        build_id: &str,
        offset: u64,
        function: Option<&str>,
    ) -> SymbolizedFrame {
        SymbolizedFrame {
            address,
            module: module.to_owned(),
            build_id: Some(build_id.to_owned()),
            module_offset: Some(offset),
            function: function.map(str::to_owned),
            file: None,
            line: None,
            inlined: false,
        }
    }

    #[test]
    fn without_debug_files_modules_and_offsets_are_found() {
        let frames = crate::parse_backtrace(BACKTRACE).unwrap();
        let modules = crate::parse_modules(MODULES).unwrap();
        let libc = "/lib/x86_64-linux-gnu/libc.so.6";
        assert_eq!(
            symbolize(&frames, &modules, &NoFiles),
            [
                frame(
                    0x7fcff876a11b,
                    "/tmp/exp/libcrash.so",
                    "bba5",
                    0x111b,
                    Some("lib_store")
                ),
                frame(
                    0x7fcff876a13d,
                    "/tmp/exp/libcrash.so",
                    "bba5",
                    0x113c,
                    Some("lib_helper")
                ),
                frame(0x56171bdfd1a0, "/tmp/exp/prog", "5b19", 0x119f, None),
                // `renamed` is not a path of the module list: by address.
                frame(0x56171bdfd1ec, "/tmp/exp/prog", "5b19", 0x11eb, None),
                frame(0x7fcff845024a, libc, "93ac", 0x27249, None),
                frame(
                    0x7fcff8450305,
                    libc,
                    "93ac",
                    0x27304,
                    Some("__libc_start_main")
                ),
                frame(0x56171bdfd091, "/tmp/exp/prog", "5b19", 0x1090, None),
            ]
        );
    }

    #[test]
    fn without_a_trampoline_every_frame_stays_and_the_first_is_exact() {
        let frames = crate::parse_backtrace(
            "./prog(+0x11a0)[0x56171bdfd1a0]\nprog(main+0x0)[0x56171bdfd1ec]\n",
        )
        .unwrap();
        let modules = crate::parse_modules(MODULES).unwrap();
        assert_eq!(
            symbolize(&frames, &modules, &NoFiles),
            [
                frame(0x56171bdfd1a0, "/tmp/exp/prog", "5b19", 0x11a0, None),
                // `main+0x0` of a return address is the next function's.
                frame(0x56171bdfd1ec, "/tmp/exp/prog", "5b19", 0x11eb, None),
            ]
        );
        // Runtime frames followed by something that is no trampoline.
        let frames = crate::parse_backtrace(
            "/x/libsampler_runtime.so(+0x1)[0x7fcff8614001]\n./prog[0x56171bdfd1a0]\n",
        )
        .unwrap();
        assert_eq!(symbolize(&frames, &modules, &NoFiles).len(), 2);
    }

    #[test]
    fn without_modules_offsets_come_from_the_backtrace() {
        let frames = crate::parse_backtrace(
            "prog(cbi_sample+0x1)[0x1]\n/lib/libc.so.6(+0x3c050)[0x7f0000003c050]\n./prog(+0x11a0)[0x56171bdfd1a0]\nprog[0x401136]\n(nil)(f+0x1)[0x5]\n",
        )
        .unwrap();
        let placed = |address, module: &str, offset| SymbolizedFrame {
            address,
            module: module.to_owned(),
            build_id: None,
            module_offset: offset,
            function: None,
            file: None,
            line: None,
            inlined: false,
        };
        let mut last = placed(5, "(nil)", None);
        last.function = Some("f".to_owned());
        assert_eq!(
            symbolize(&frames, &[], &NoFiles),
            [
                placed(0x56171bdfd1a0, "./prog", Some(0x11a0)),
                placed(0x401136, "prog", Some(0x401135)),
                last,
            ]
        );
    }

    #[test]
    fn an_outlined_slow_copy_is_its_functions_frame() {
        let named = |function: &str, inlined| SymbolizedFrame {
            address: 1,
            module: "/tmp/exp/prog".to_owned(),
            build_id: None,
            module_offset: Some(1),
            function: Some(function.to_owned()),
            file: Some("prog.c".to_owned()),
            line: Some(3),
            inlined,
        };
        let names = |frames: &[SymbolizedFrame]| -> Vec<(String, bool)> {
            frames
                .iter()
                .map(|f| (f.function.clone().unwrap(), f.inlined))
                .collect()
        };
        let expected = |list: &[(&str, bool)]| -> Vec<(String, bool)> {
            list.iter().map(|&(n, i)| (n.to_owned(), i)).collect()
        };
        let merged = |mut frames: Vec<SymbolizedFrame>| {
            merge_outlined_copies(&mut frames);
            names(&frames)
        };
        // Called from `store`, which was inlined into `main`.
        let frames = vec![
            named("strlen_like", true),
            named("store__cbi_slow", false),
            named("store", true),
            named("main", false),
        ];
        assert_eq!(
            merged(frames),
            expected(&[("strlen_like", true), ("store", false), ("main", false)])
        );
        // A tail call: no frame of `store`; a clone's name keeps its suffix.
        let frames = vec![
            named("store__cbi_slow.constprop.0", false),
            named("main", false),
        ];
        assert_eq!(
            merged(frames),
            expected(&[("store.constprop.0", false), ("main", false)])
        );
        // A declined draw: the copy called `store` again, which crashed
        // (inlined into the copy, or not); with tail calls, no frame of
        // the copy's caller.
        for inlined in [false, true] {
            let frames = vec![
                named("strlen_like", true),
                named("store", inlined),
                named("store__cbi_slow", false),
                named("store", true),
                named("main", false),
            ];
            assert_eq!(
                merged(frames),
                expected(&[("strlen_like", true), ("store", true), ("main", false)])
            );
        }
        let frames = vec![
            named("store.isra.0", false),
            named("store__cbi_slow", false),
            named("main", false),
        ];
        assert_eq!(
            merged(frames),
            expected(&[("store.isra.0", false), ("main", false)])
        );
        // Another function's frame before the copy is not a re-entry.
        let frames = vec![
            named("storex", false),
            named("store__cbi_slow", false),
            named("store", false),
            named("main", false),
        ];
        assert_eq!(
            merged(frames),
            expected(&[("storex", false), ("store", false), ("main", false)])
        );
        // A warm function's copy for sampled calls (never re-entered).
        let frames = vec![
            named("strlen_like", true),
            named("store__cbi_whole", false),
            named("store", true),
            named("main", false),
        ];
        assert_eq!(
            merged(frames),
            expected(&[("strlen_like", true), ("store", false), ("main", false)])
        );
        // Names that only contain the suffix stay.
        let frames = vec![named("__cbi_slow", false), named("x__cbi_slowly", false)];
        assert_eq!(
            merged(frames),
            expected(&[("__cbi_slow", false), ("x__cbi_slowly", false)])
        );
    }

    #[test]
    fn names_of_objects() {
        assert!(same_object("./prog", "/tmp/x/prog"));
        assert!(same_object("prog", "/tmp/x/prog"));
        assert!(same_object("././bin/prog", "/tmp/bin/prog"));
        assert!(same_object("/tmp/x/prog", "/tmp/x/prog"));
        assert!(!same_object("/other/prog", "/tmp/x/prog"));
        assert!(!same_object("rog", "/tmp/x/prog"));
        assert!(!same_object("", "/tmp/x/prog"));
        assert!(!same_object("./", "/tmp/x/prog"));
        assert!(is_libc("/lib/x86_64-linux-gnu/libc.so.6"));
        assert!(is_libc("/lib/libc-2.31.so"));
        assert!(!is_libc("/lib/libcrypt.so.1"));
        assert!(is_runtime_function("cbi_sample"));
        assert!(is_runtime_function("sampler_runtime::crash::handle"));
        assert!(is_runtime_function(
            "_ZN15sampler_runtime5crash6handle17h4692d613c06aef0dE"
        ));
        assert!(!is_runtime_function("main"));
    }
}
