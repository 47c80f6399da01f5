//! The grouping key of a crash.

use super::symbolize::{SymbolizedFrame, is_libc, is_runtime_function, is_runtime_object};

/// The key that groups crashes with the same cause: the functions of the
/// top `depth` frames of the program's own code, joined by ` | `, e.g.
/// `lib_store | lib_helper | main`.
///
/// Own frames have a file and a line (debug information) and are neither
/// in a system library (under `/lib`, `/usr/lib`, `/lib64`, `/usr/lib64`,
/// `/lib32`, `/usr/lib32`; or the C library, libpthread, the dynamic loader
/// or the sampler runtime by file name) nor the runtime's functions.
/// Inlined frames count: the chain of source functions is the same
/// whatever the compiler inlined. Line numbers are left out, as they move
/// from one build to the next.
///
/// When no frame is the program's own, the key is the top `depth` frames
/// with a function name, as `module!function` (the module's file name):
/// `libc.so.6!abort | libfoo.so!foo_parse`. `None` when no frame has a
/// function name, or `depth` is 0.
pub fn crash_signature(frames: &[SymbolizedFrame], depth: usize) -> Option<String> {
    if depth == 0 {
        return None;
    }
    let own: Vec<&str> = frames
        .iter()
        .filter(|frame| is_own(frame))
        .filter_map(|frame| frame.function.as_deref())
        .take(depth)
        .collect();
    if !own.is_empty() {
        return Some(own.join(" | "));
    }
    let any: Vec<String> = frames
        .iter()
        .filter_map(|frame| {
            let function = frame.function.as_deref()?;
            (!is_runtime_function(function))
                .then(|| format!("{}!{function}", file_name(&frame.module)))
        })
        .take(depth)
        .collect();
    (!any.is_empty()).then(|| any.join(" | "))
}

fn is_own(frame: &SymbolizedFrame) -> bool {
    frame.file.is_some()
        && frame.line.is_some()
        && !is_system_module(&frame.module)
        && !frame.function.as_deref().is_some_and(is_runtime_function)
}

fn file_name(path: &str) -> &str {
    path.rsplit('/').next().unwrap_or(path)
}

/// True for the system's libraries, whose frames say where a crash
/// surfaced but not which code of the program caused it.
pub fn is_system_module(path: &str) -> bool {
    const SYSTEM_DIRECTORIES: [&str; 6] = [
        "/lib/",
        "/usr/lib/",
        "/lib64/",
        "/usr/lib64/",
        "/lib32/",
        "/usr/lib32/",
    ];
    let name = file_name(path);
    SYSTEM_DIRECTORIES
        .iter()
        .any(|directory| path.starts_with(directory))
        || is_libc(path)
        || name.starts_with("libpthread")
        || name.starts_with("ld-linux")
        || is_runtime_object(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame(module: &str, function: Option<&str>, line: Option<u32>) -> SymbolizedFrame {
        SymbolizedFrame {
            address: 0x1000,
            module: module.to_owned(),
            build_id: None,
            module_offset: Some(0xfff),
            function: function.map(str::to_owned),
            file: line.map(|_| "/src/a.c".to_owned()),
            line,
            inlined: false,
        }
    }

    #[test]
    fn own_frames_by_function_name() {
        let frames = [
            frame(
                "/lib/x86_64-linux-gnu/libc.so.6",
                Some("__strlen_avx2"),
                None,
            ),
            frame("/opt/app/lib/libplug.so", Some("parse"), Some(10)),
            frame("/opt/app/bin/app", Some("helper"), Some(20)),
            frame("/opt/app/bin/app", None, Some(21)),
            frame("/opt/app/bin/app", Some("no_debug"), None),
            frame(
                "/usr/lib/x86_64-linux-gnu/libglib-2.0.so.0",
                Some("g_main_loop_run"),
                Some(5),
            ),
            frame("/opt/app/bin/app", Some("cbi_sample"), Some(1)),
            frame("/opt/app/bin/libc.so.6", Some("odd"), Some(1)),
            frame("/opt/app/bin/app", Some("main"), Some(30)),
            frame("/opt/app/bin/app", Some("_start"), Some(1)),
        ];
        assert_eq!(
            crash_signature(&frames, 5).as_deref(),
            Some("parse | helper | main | _start")
        );
        assert_eq!(
            crash_signature(&frames, 2).as_deref(),
            Some("parse | helper")
        );
        assert_eq!(crash_signature(&frames, 0), None);
    }

    #[test]
    fn without_own_frames_system_frames_with_their_module() {
        let frames = [
            frame(
                "/lib/x86_64-linux-gnu/libsampler_runtime.so",
                Some("sampler_runtime::crash::handle"),
                None,
            ),
            frame("/lib/x86_64-linux-gnu/libc.so.6", None, None),
            frame("/lib/x86_64-linux-gnu/libc.so.6", Some("abort"), None),
            frame("/opt/app/bin/app", Some("main"), None),
            frame(
                "/lib/x86_64-linux-gnu/libc.so.6",
                Some("__libc_start_main"),
                None,
            ),
        ];
        assert_eq!(
            crash_signature(&frames, 2).as_deref(),
            Some("libc.so.6!abort | app!main")
        );
        assert_eq!(crash_signature(&frames[..2], 5), None);
        assert_eq!(crash_signature(&[], 5), None);
    }

    #[test]
    fn system_modules() {
        assert!(is_system_module("/usr/lib64/libz.so.1"));
        assert!(is_system_module("/opt/x/ld-linux-x86-64.so.2"));
        assert!(is_system_module("/opt/x/libpthread.so.0"));
        assert!(is_system_module("./libsampler_runtime.so"));
        assert!(!is_system_module("/usr/local/lib/libfoo.so"));
        assert!(!is_system_module("/libexec/foo"));
    }
}
