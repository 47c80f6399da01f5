//! `extract-section` on ELF files built at test time by gcc and binutils.

use std::path::PathBuf;
use std::process::{Command, Output};

const SECTION: &str = ".debug_site_info";

/// A scratch directory where the tests build their inputs.
struct Workdir {
    dir: tempfile::TempDir,
}

impl Workdir {
    fn new() -> Self {
        Self {
            dir: tempfile::tempdir().expect("create a temporary directory"),
        }
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    fn write(&self, name: &str, contents: impl AsRef<[u8]>) -> PathBuf {
        let path = self.path(name);
        std::fs::write(&path, contents).unwrap();
        path
    }

    /// Runs a build command in the directory; it must succeed.
    fn run(&self, program: &str, args: &[&str]) {
        let output = Command::new(program)
            .args(args)
            .current_dir(self.dir.path())
            .output()
            .unwrap_or_else(|error| panic!("cannot run `{program}` (is it installed?): {error}"));
        assert!(
            output.status.success(),
            "`{program} {}` failed:\n{}",
            args.join(" "),
            String::from_utf8_lossy(&output.stderr)
        );
    }

    /// Compiles `source` to `name.o`, then adds `contents` (if any) as the
    /// site-info section with objcopy, as `sampler-cc`'s first design did.
    fn object(&self, name: &str, source: &str, contents: Option<&[u8]>) -> PathBuf {
        let c_file = format!("{name}.c");
        let object = format!("{name}.o");
        self.write(&c_file, source);
        self.run("gcc", &["-c", "-fPIC", &c_file, "-o", &object]);
        if let Some(contents) = contents {
            let data = format!("{name}.section");
            self.write(&data, contents);
            self.run(
                "objcopy",
                &["--add-section", &format!("{SECTION}={data}"), &object],
            );
        }
        self.path(&object)
    }

    fn extract(&self, args: &[&str]) -> Output {
        Command::new(env!("CARGO_BIN_EXE_extract-section"))
            .args(args)
            .current_dir(self.dir.path())
            .output()
            .unwrap()
    }
}

fn stderr(output: &Output) -> String {
    String::from_utf8(output.stderr.clone()).unwrap()
}

fn assert_extracts(output: &Output, expected: &[u8]) {
    assert_eq!(output.status.code(), Some(0), "stderr: {}", stderr(output));
    assert_eq!(
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(expected)
    );
    assert_eq!(output.stdout, expected);
    assert_eq!(stderr(output), "");
}

const TABLE_A: &[u8] = b"<sites unit=\"0000000000000000000000000000000a\" scheme=\"branches\">\na.c\t1\tf\t0\tx\n</sites>\n";
const TABLE_B: &[u8] = b"<sites unit=\"0000000000000000000000000000000b\" scheme=\"returns\">\nb.c\t2\tg\t1\th\n</sites>\n";

#[test]
fn object_with_added_section_loses_its_nul_bytes() {
    let work = Workdir::new();
    let mut contents = TABLE_A.to_vec();
    contents.extend_from_slice(b"\0\0\0");
    contents.insert(5, 0);
    work.object("a", "int f(int x) { return x; }\n", Some(&contents));
    assert_extracts(&work.extract(&[SECTION, "a.o"]), TABLE_A);
}

#[test]
fn object_with_assembler_directive() {
    let work = Workdir::new();
    work.object(
        "asm",
        concat!(
            "__asm__(\".pushsection .debug_site_info,\\\"\\\",@progbits\\n\"\n",
            "        \".ascii \\\"from asm\\\\n\\\"\\n\"\n",
            "        \".popsection\");\n",
            "int f(void) { return 0; }\n",
        ),
        None,
    );
    assert_extracts(&work.extract(&[SECTION, "asm.o"]), b"from asm\n");
}

#[test]
fn executable_linked_from_several_objects_concatenates_in_link_order() {
    let work = Workdir::new();
    work.object("a", "int f(void) { return 1; }\n", Some(TABLE_A));
    work.object("b", "int g(void) { return 2; }\n", Some(TABLE_B));
    // An aligned section forces the linker to pad with NULs before it.
    work.object(
        "m",
        concat!(
            "__asm__(\".pushsection .debug_site_info,\\\"\\\",@progbits\\n\"\n",
            "        \".balign 64\\n\"\n",
            "        \".ascii \\\"main\\\\n\\\"\\n\"\n",
            "        \".popsection\");\n",
            "int f(void); int g(void);\n",
            "int main(void) { return f() + g() - 3; }\n",
        ),
        None,
    );
    work.run("gcc", &["a.o", "m.o", "b.o", "-o", "prog"]);
    let mut expected = TABLE_A.to_vec();
    expected.extend_from_slice(b"main\n");
    expected.extend_from_slice(TABLE_B);
    assert_extracts(&work.extract(&[SECTION, "prog"]), &expected);

    // The section is not loaded at run time and `strip` removes it.
    work.run("strip", &["prog"]);
    let stripped = work.extract(&[SECTION, "prog"]);
    assert_eq!(stripped.status.code(), Some(0));
    assert_eq!(stripped.stdout, b"");
    assert_eq!(
        stderr(&stripped),
        "extract-section: `prog`: section `.debug_site_info` is missing\n"
    );
}

#[test]
fn shared_library() {
    let work = Workdir::new();
    work.object("a", "int f(void) { return 1; }\n", Some(TABLE_A));
    work.object("b", "int g(void) { return 2; }\n", Some(TABLE_B));
    work.run("gcc", &["-shared", "b.o", "a.o", "-o", "libab.so"]);
    let mut expected = TABLE_B.to_vec();
    expected.extend_from_slice(TABLE_A);
    assert_extracts(&work.extract(&[SECTION, "libab.so"]), &expected);
}

#[test]
fn files_are_written_in_argument_order() {
    let work = Workdir::new();
    work.object("a", "int f(void) { return 1; }\n", Some(TABLE_A));
    work.object("b", "int g(void) { return 2; }\n", Some(TABLE_B));
    let mut expected = TABLE_B.to_vec();
    expected.extend_from_slice(TABLE_A);
    expected.extend_from_slice(TABLE_B);
    assert_extracts(&work.extract(&[SECTION, "b.o", "a.o", "b.o"]), &expected);
}

#[test]
fn every_member_of_an_archive_in_archive_order() {
    let work = Workdir::new();
    work.object("a", "int f(void) { return 1; }\n", Some(TABLE_A));
    work.object("b", "int g(void) { return 2; }\n", Some(TABLE_B));
    work.object("plain", "int h(void) { return 3; }\n", None);
    work.run("ar", &["rcs", "libx.a", "b.o", "plain.o", "a.o"]);
    let output = work.extract(&[SECTION, "libx.a"]);
    let mut expected = TABLE_B.to_vec();
    expected.extend_from_slice(TABLE_A);
    assert_eq!(output.stdout, expected);
    assert_eq!(
        stderr(&output),
        "extract-section: `libx.a(plain.o)`: section `.debug_site_info` is missing\n"
    );
    assert_eq!(output.status.code(), Some(0));

    let required = work.extract(&["--require", SECTION, "libx.a"]);
    assert_eq!(required.stdout, expected);
    assert_eq!(required.status.code(), Some(1));
}

#[test]
fn thin_archive_members_are_read_from_their_files() {
    let work = Workdir::new();
    work.object("a", "int f(void) { return 1; }\n", Some(TABLE_A));
    work.object("b", "int g(void) { return 2; }\n", Some(TABLE_B));
    work.run("ar", &["rcT", "libthin.a", "a.o", "b.o"]);
    let mut expected = TABLE_A.to_vec();
    expected.extend_from_slice(TABLE_B);
    assert_extracts(&work.extract(&[SECTION, "libthin.a"]), &expected);
}

#[test]
fn every_elf_class_and_byte_order() {
    let work = Workdir::new();
    work.write("table", TABLE_A);
    for target in ["elf32-little", "elf64-little", "elf32-big", "elf64-big"] {
        let object = format!("{target}.o");
        work.run(
            "objcopy",
            &[
                "-I",
                "binary",
                "-O",
                target,
                "--rename-section",
                &format!(".data={SECTION},contents,readonly"),
                "table",
                &object,
            ],
        );
        assert_extracts(&work.extract(&[SECTION, &object]), TABLE_A);
    }
    // A 32-bit object as gcc itself writes it.
    work.write("x.c", "int f(void) { return 1; }\n");
    work.run("gcc", &["-m32", "-c", "x.c", "-o", "x32.o"]);
    work.run(
        "objcopy",
        &["--add-section", &format!("{SECTION}=table"), "x32.o"],
    );
    assert_extracts(&work.extract(&[SECTION, "x32.o"]), TABLE_A);
}

#[test]
fn compressed_sections_are_decompressed() {
    let work = Workdir::new();
    let table = TABLE_A.repeat(50);
    work.object("a", "int f(void) { return 1; }\n", Some(&table));
    work.run(
        "objcopy",
        &["--compress-debug-sections=zlib", "a.o", "az.o"],
    );
    let headers = Command::new("readelf")
        .args(["-SW", &work.path("az.o").display().to_string()])
        .output()
        .unwrap();
    let headers = String::from_utf8(headers.stdout).unwrap();
    let line = headers.lines().find(|l| l.contains(SECTION)).unwrap();
    assert!(line.contains(" C "), "section not compressed: {line}");
    assert_extracts(&work.extract(&[SECTION, "az.o"]), &table);
}

#[test]
fn missing_and_empty_sections_are_named_and_skipped() {
    let work = Workdir::new();
    work.object("a", "int f(void) { return 1; }\n", Some(TABLE_A));
    work.object("plain", "int g(void) { return 2; }\n", None);
    work.object("empty", "int h(void) { return 3; }\n", Some(b""));
    work.object("nuls", "int i(void) { return 4; }\n", Some(b"\0\0\0\0"));
    let output = work.extract(&[SECTION, "plain.o", "a.o", "empty.o", "nuls.o"]);
    assert_eq!(output.stdout, TABLE_A);
    assert_eq!(
        stderr(&output),
        "extract-section: `plain.o`: section `.debug_site_info` is missing\n\
         extract-section: `empty.o`: section `.debug_site_info` is empty\n\
         extract-section: `nuls.o`: section `.debug_site_info` is empty\n"
    );
    assert_eq!(output.status.code(), Some(0));
    let required = work.extract(&["--require", SECTION, "plain.o", "a.o"]);
    assert_eq!(required.stdout, TABLE_A);
    assert_eq!(required.status.code(), Some(1));
}

#[test]
fn broken_inputs_are_named_and_do_not_stop_the_others() {
    let work = Workdir::new();
    let object = work.object("a", "int f(void) { return 1; }\n", Some(TABLE_A));
    work.write("notes.txt", "just text\n");
    work.write("empty.bin", "");
    let bytes = std::fs::read(&object).unwrap();
    work.write("truncated.o", &bytes[..bytes.len() / 2]);
    work.write("header-only.o", &bytes[..20]);
    let mut bad_archive = b"!<arch>\n".to_vec();
    bad_archive.extend_from_slice(b"a.o/            0           0     0     644     99999     `\n");
    work.write("bad.a", bad_archive);
    let output = work.extract(&[
        SECTION,
        "notes.txt",
        "a.o",
        "empty.bin",
        "truncated.o",
        "header-only.o",
        "bad.a",
        "does-not-exist.o",
    ]);
    assert_eq!(output.stdout, TABLE_A);
    let messages = stderr(&output);
    let lines: Vec<&str> = messages.lines().collect();
    assert_eq!(lines.len(), 6, "{messages}");
    assert_eq!(
        lines[0],
        "extract-section: `notes.txt`: not an ELF file or archive (starts with 6a 75 73 74)"
    );
    assert_eq!(
        lines[1],
        "extract-section: `empty.bin`: not an ELF file or archive (the file is empty)"
    );
    assert_eq!(
        lines[2],
        "extract-section: `truncated.o`: malformed or truncated ELF file: Invalid ELF section header offset/size/alignment"
    );
    assert_eq!(
        lines[3],
        "extract-section: `header-only.o`: malformed or truncated ELF file: Invalid ELF header size or alignment"
    );
    assert_eq!(
        lines[4],
        "extract-section: `bad.a(a.o)`: truncated archive: the member's 99999 bytes at offset 68 extend past the end of the file (68 bytes)"
    );
    assert_eq!(
        lines[5],
        "extract-section: `does-not-exist.o`: cannot read: No such file or directory (os error 2)"
    );
    assert_eq!(output.status.code(), Some(2));
}

#[test]
fn usage_errors_and_help() {
    let work = Workdir::new();
    let output = work.extract(&[SECTION]);
    assert_eq!(output.status.code(), Some(2));
    assert!(
        stderr(&output).contains("<FILES>..."),
        "{}",
        stderr(&output)
    );
    let help = work.extract(&["--help"]);
    assert_eq!(help.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&help.stdout).contains("--require"));
}

#[test]
fn a_closed_pipe_is_not_an_error() {
    let work = Workdir::new();
    let table = TABLE_A.repeat(20_000);
    work.object("big", "int f(void) { return 1; }\n", Some(&table));
    let script = format!(
        "'{}' {SECTION} big.o | head -c 10 >/dev/null; echo \"${{PIPESTATUS[0]}}\"",
        env!("CARGO_BIN_EXE_extract-section")
    );
    let output = Command::new("bash")
        .args(["-c", &script])
        .current_dir(work.dir.path())
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&output.stdout), "0\n");
    assert_eq!(stderr(&output), "");
}

mod damaged {
    use super::*;
    use proptest::prelude::*;
    use sampler_extract::for_each_section;
    use std::sync::OnceLock;

    /// An object and an archive holding it, built once for all cases.
    fn originals() -> &'static (Vec<u8>, Vec<u8>) {
        static ORIGINALS: OnceLock<(Vec<u8>, Vec<u8>)> = OnceLock::new();
        ORIGINALS.get_or_init(|| {
            let work = Workdir::new();
            let object = work.object("a", "int f(void) { return 1; }\n", Some(TABLE_A));
            work.run("ar", &["rcs", "liba.a", "a.o"]);
            (
                std::fs::read(object).unwrap(),
                std::fs::read(work.path("liba.a")).unwrap(),
            )
        })
    }

    fn extract_all(bytes: &[u8]) {
        let work = Workdir::new();
        let path = work.write("damaged", bytes);
        let _ = for_each_section(&path, SECTION, &mut |_origin, outcome| {
            // Touch the result so that nothing is optimised away.
            std::hint::black_box(outcome.is_ok());
            Ok::<(), ()>(())
        });
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]

        #[test]
        fn damaged_objects_and_archives_never_panic(
            archive in any::<bool>(),
            edits in proptest::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..16),
            cut in any::<prop::sample::Index>(),
            truncate in any::<bool>(),
        ) {
            let (object, library) = originals();
            let mut bytes = if archive { library.clone() } else { object.clone() };
            for (at, byte) in &edits {
                let index = at.index(bytes.len());
                bytes[index] = *byte;
            }
            if truncate {
                bytes.truncate(cut.index(bytes.len()));
            }
            extract_all(&bytes);
        }
    }
}
