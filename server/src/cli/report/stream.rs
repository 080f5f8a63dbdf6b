//! `check`'s report written while the cases run, a script at a time, for the formats whose
//! output is a sequence (human, json, github): each script is printed as soon as it and every
//! script before it are done, then dropped, so memory holds a batch of scripts, not the whole
//! report. SARIF is one JSON document, written around its results array as they come
//! ([`sarif::LogWriter`]); JUnit (its totals open the document) is written whole.

use std::io::{self, Write};

use super::describe::{ScriptReport, Summary};
use super::{Format, github, human, json, sarif};
use crate::project::verdict::Note;

/// A report being written.
pub struct ReportStream<'a> {
    format: Format,
    color: bool,
    out: &'a mut dyn Write,
    summary: Summary,
    any_script: bool,
    /// The SARIF log being written (`--format sarif`).
    sarif: Option<sarif::LogWriter>,
}

impl<'a> ReportStream<'a> {
    /// Whether `format` can be written a script at a time.
    pub fn streams(format: Format) -> bool {
        matches!(
            format,
            Format::Human | Format::Json | Format::Github | Format::Sarif
        )
    }

    /// Starts the report (`format` must stream): the CRD sources that could not be used and
    /// the remarks about the inputs come first.
    pub fn begin(
        format: Format,
        color: bool,
        notes: &[Note],
        crd_errors: &[Note],
        out: &'a mut dyn Write,
    ) -> io::Result<ReportStream<'a>> {
        debug_assert!(Self::streams(format));
        let mut log = None;
        match format {
            Format::Human => human::begin(notes, crd_errors, color, out)?,
            Format::Github => github::begin(notes, crd_errors, out)?,
            Format::Sarif => {
                let mut writer = sarif::LogWriter::begin(&sarif::check_rules(), out)?;
                for finding in sarif::input_findings(notes, crd_errors) {
                    writer.result(&finding, out)?;
                }
                log = Some(writer);
            }
            _ => json::begin(crd_errors, out)?,
        }
        let mut summary = Summary::default();
        summary.add_inputs(notes, crd_errors);
        Ok(ReportStream {
            format,
            color,
            out,
            summary,
            any_script: false,
            sarif: log,
        })
    }

    /// Writes one script (in walk order) and counts it.
    pub fn script(&mut self, script: &ScriptReport) -> io::Result<()> {
        self.summary.add_script(script);
        self.any_script = true;
        match (self.format, &mut self.sarif) {
            (Format::Human, _) => human::script_part(script, self.color, self.out),
            (Format::Github, _) => github::script_part(script, self.out),
            (_, Some(log)) => {
                for finding in sarif::script_findings(script) {
                    log.result(&finding, self.out)?;
                }
                Ok(())
            }
            _ => json::script_part(script, self.out),
        }
    }

    /// Ends the report; the counts of everything written.
    pub fn end(self, shuffle_runs: u32) -> io::Result<Summary> {
        match self.format {
            Format::Human => human::end(
                &self.summary,
                self.any_script,
                shuffle_runs,
                self.color,
                self.out,
            )?,
            Format::Github => github::end(&self.summary, self.out)?,
            _ => {}
        }
        if let Some(log) = self.sarif {
            log.end(self.out)?;
        }
        self.out.flush()?;
        Ok(self.summary)
    }
}

#[cfg(test)]
mod tests {
    use super::super::fixtures;
    use super::*;

    /// Written a script at a time, every streaming format reads exactly as written whole.
    #[test]
    fn a_streamed_report_reads_as_the_whole_one() {
        let report = fixtures::report();
        for format in [Format::Human, Format::Json, Format::Github, Format::Sarif] {
            let mut whole = Vec::new();
            super::super::write(&report, format, false, &mut whole).unwrap();
            let mut streamed = Vec::new();
            let mut stream = ReportStream::begin(
                format,
                false,
                &report.notes,
                &report.crd_errors,
                &mut streamed,
            )
            .unwrap();
            for script in &report.scripts {
                stream.script(script).unwrap();
            }
            let summary = stream.end(report.shuffle_runs).unwrap();
            assert_eq!(summary, Summary::of(&report), "{format:?}");
            assert_eq!(
                String::from_utf8(streamed).unwrap(),
                String::from_utf8(whole).unwrap(),
                "{format:?}"
            );
        }
    }
}
