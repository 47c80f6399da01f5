//! `sampler-run install` and `uninstall` on a real instrumented program.

use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::ExitStatusExt;

use crate::{Collector, User, alone, eventually, tools};

#[test]
fn a_wrapped_program_behaves_as_before_and_reports() {
    let collector = Collector::start();
    let user = User::consenting();
    user.configure(&collector.config());
    let bin = user.dir.path().join("bin");
    std::fs::create_dir(&bin).unwrap();
    let program = bin.join("demo");
    std::fs::copy(&tools().program, &program).unwrap();
    std::fs::set_permissions(&program, std::fs::Permissions::from_mode(0o751)).unwrap();
    let original = std::fs::read(&program).unwrap();

    let output = user
        .command()
        .args(["install", "--app", "demo", "--version", "3.1"])
        .arg(&program)
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let bin = std::fs::canonicalize(&bin).unwrap();
    assert_eq!(
        String::from_utf8(output.stdout).unwrap(),
        format!(
            "{}: wrapped; the program is now {}\n",
            program.display(),
            bin.join("wrapped/demo").display()
        )
    );
    assert_eq!(
        std::fs::metadata(&program).unwrap().permissions().mode() & 0o7777,
        0o751
    );
    assert_eq!(std::fs::read(bin.join("wrapped/demo")).unwrap(), original);

    // From $PATH and through a symlink, each outcome as the program alone.
    std::os::unix::fs::symlink(&program, bin.join("demo-link")).unwrap();
    for (done, (name, mode)) in [("demo", "ok"), ("demo", "exit"), ("demo-link", "segv")]
        .into_iter()
        .enumerate()
    {
        // The wrapper with this user's environment, found on $PATH.
        let mut wrapper = std::process::Command::new(name);
        for (key, value) in user.command().get_envs() {
            match value {
                Some(value) => wrapper.env(key, value),
                None => wrapper.env_remove(key),
            };
        }
        let status = wrapper
            .env("PATH", format!("{}:/usr/bin:/bin", bin.display()))
            .arg(mode)
            .output()
            .unwrap()
            .status;
        let expected = alone(mode);
        assert_eq!(
            (status.code(), status.signal()),
            (expected.code(), expected.signal()),
            "{name} {mode}"
        );
        assert!(
            eventually(std::time::Duration::from_secs(10), || collector
                .runs()
                .len()
                == done + 1),
            "{name} {mode}"
        );
    }
    let stored = collector.runs();
    let mut outcomes: Vec<(String, i64, i64)> = stored
        .iter()
        .map(|run| {
            (
                run["version"].as_str().unwrap().to_owned(),
                run["exit_status"].as_i64().unwrap(),
                run["exit_signal"].as_i64().unwrap(),
            )
        })
        .collect();
    outcomes.sort();
    assert_eq!(
        outcomes,
        [
            ("3.1".to_owned(), 0, 0),
            ("3.1".to_owned(), 0, 11),
            ("3.1".to_owned(), 3, 0)
        ]
    );

    let output = user
        .command()
        .arg("uninstall")
        .arg(&program)
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert_eq!(std::fs::read(&program).unwrap(), original);
    assert!(!bin.join("wrapped").exists());
    let output = user
        .command()
        .arg("uninstall")
        .arg(&program)
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1));
    assert_eq!(
        String::from_utf8(output.stderr).unwrap(),
        format!(
            "sampler-run: {}: not a sampler-run wrapper\n",
            program.display()
        )
    );
}
