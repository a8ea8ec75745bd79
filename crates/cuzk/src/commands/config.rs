//! `cuzk config import FILE`: cuzk's daemon configuration written from
//! Curio's cuzk TOML (each key's mapping in `cuzk_daemon::curio`), and
//! Curio's command-line form `cuzk --config FILE`, read as
//! `cuzk daemon --config FILE`.

use std::ffi::OsString;
use std::path::PathBuf;

use anyhow::{Context, Result};
use clap::Subcommand;

/// `cuzk config`.
#[derive(Subcommand, Debug)]
pub(crate) enum ConfigCommand {
    /// Write cuzk's daemon configuration from Curio's cuzk configuration
    /// (every key mapped or, where cuzk has no such knob, noted in a comment).
    Import {
        /// Curio's cuzk TOML (its daemon, memory, gpus, pipeline, srs and logging tables).
        file: PathBuf,
        /// Where to write cuzk's; stdout when left out.
        #[arg(long)]
        out: Option<PathBuf>,
    },
}

pub(crate) fn run(command: ConfigCommand) -> Result<()> {
    match command {
        ConfigCommand::Import { file, out } => {
            let written = cuzk_daemon::curio::import_file(&file).map_err(anyhow::Error::msg)?;
            match out {
                Some(path) => std::fs::write(&path, written)
                    .with_context(|| format!("writing {}", path.display()))?,
                None => print!("{written}"),
            }
            Ok(())
        }
    }
}

/// The arguments with `daemon` put in front of Curio's form: its systemd
/// unit runs `cuzk --config FILE` (also `-c FILE`, `--config=FILE`), which
/// is `cuzk daemon --config FILE`. Any other command line is left as it is.
pub(crate) fn curio_form(args: impl IntoIterator<Item = OsString>) -> Vec<OsString> {
    let mut args: Vec<OsString> = args.into_iter().collect();
    let curio = args
        .get(1)
        .and_then(|a| a.to_str())
        .is_some_and(|a| a == "--config" || a == "-c" || a.starts_with("--config="));
    if curio {
        args.insert(1, "daemon".into());
    }
    args
}

#[cfg(test)]
mod tests {
    use super::*;

    fn form(args: &[&str]) -> Vec<String> {
        curio_form(args.iter().map(OsString::from))
            .into_iter()
            .map(|a| a.into_string().unwrap())
            .collect()
    }

    #[test]
    fn curios_command_line_is_the_daemon() {
        assert_eq!(
            form(&["cuzk", "--config", "/etc/cuzk.toml"]),
            ["cuzk", "daemon", "--config", "/etc/cuzk.toml"]
        );
        assert_eq!(
            form(&["cuzk", "-c", "f.toml", "--log-level", "debug"]),
            ["cuzk", "daemon", "-c", "f.toml", "--log-level", "debug"]
        );
        assert_eq!(
            form(&["cuzk", "--config=f.toml"]),
            ["cuzk", "daemon", "--config=f.toml"]
        );
        for same in [
            &["cuzk", "daemon", "--config", "f.toml"][..],
            &["cuzk", "client", "status"],
            &["cuzk"],
        ] {
            assert_eq!(form(same), same);
        }
    }

    #[test]
    fn the_form_parses_as_the_daemon_command() {
        use clap::Parser;
        let cli = crate::Cli::try_parse_from(curio_form(
            ["cuzk", "--config", "f.toml", "-l", "127.0.0.1:9820"].map(OsString::from),
        ))
        .unwrap();
        match cli.command {
            crate::Command::Daemon(args) => {
                assert_eq!(args.config.unwrap(), PathBuf::from("f.toml"));
                assert_eq!(args.listen, ["127.0.0.1:9820"]);
            }
            other => panic!("{other:?}"),
        }
    }
}
