//! Lua's chunk positions in error text (`<string>:LINE:`, gopher-lua's and our engine's name
//! for the script chunk) mapped to the file and line a reader can open: the script file, or
//! for a script embedded in a ConfigMap the manifest and its YAML line. One mapping for every
//! report format and the language server.

/// The chunk name the engine gives scripts, as gopher-lua does in Kruise (`<string>`).
const CHUNK: &str = "<string>:";

/// Where a script's lines are: the file shown to the user and, for a script embedded in a
/// ConfigMap, the file line of each script line (a double-quoted YAML string puts many on one
/// line, a folded one spreads one over several: no offset from the first line would do).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ScriptPlace<'a> {
    pub file: &'a str,
    /// The file line of each script line; empty for a `.lua` file (the script is the file).
    pub lines: &'a [u32],
}

impl ScriptPlace<'_> {
    /// The file line holding the script's line `lua_line` (a line past the last, as Lua's
    /// `<eof>` errors give, on the last).
    pub fn file_line(&self, lua_line: u32) -> u32 {
        match self.lines {
            [] => lua_line.max(1),
            lines => lines[(lua_line.max(1) as usize - 1).min(lines.len() - 1)],
        }
    }
}

/// `text` with every `<string>:LINE:` replaced by `file:FILE_LINE:` (the leading position
/// of a message, positions inside nested messages and traceback lines alike).
pub fn map_positions(text: &str, place: ScriptPlace<'_>) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find(CHUNK) {
        out.push_str(&rest[..at]);
        let after = &rest[at + CHUNK.len()..];
        let digits = after.bytes().take_while(u8::is_ascii_digit).count();
        let line = after[..digits].parse::<u32>().ok().filter(|line| *line > 0);
        match line {
            Some(line) if after[digits..].starts_with(':') => {
                out.push_str(place.file);
                out.push(':');
                out.push_str(&place.file_line(line).to_string());
                out.push(':');
                rest = &after[digits + 1..];
            }
            _ => {
                out.push_str(CHUNK);
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

/// A message without its leading `<string>:LINE: ` (for reports that already print the
/// position in front of it), the positions in the rest mapped as [`map_positions`] does.
pub fn message_after_position(text: &str, place: ScriptPlace<'_>) -> String {
    let body = text
        .strip_prefix(CHUNK)
        .and_then(|rest| {
            let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
            (digits > 0).then(|| rest[digits..].strip_prefix(": "))?
        })
        .unwrap_or(text);
    map_positions(body, place)
}

/// A `.lua` file's script error as `run` and `accept` print it: where (`FILE:LINE`, or `FILE`
/// without a line) and what (`KIND error: MESSAGE`, the message's own positions mapped).
pub fn file_script_error(
    file: &str,
    error: &kruise_lua_engine::error::ScriptError,
) -> (String, String) {
    let place = ScriptPlace { file, lines: &[] };
    let at = match error.line {
        Some(line) => format!("{file}:{line}"),
        None => file.to_owned(),
    };
    let what = format!(
        "{} error: {}",
        error.kind,
        message_after_position(&error.message, place)
    );
    (at, what)
}

#[cfg(test)]
mod tests {
    use super::*;

    const FILE: ScriptPlace<'static> = ScriptPlace {
        file: "lua_configuration/x/Y/trafficRouting.lua",
        lines: &[],
    };
    const CONFIGMAP: ScriptPlace<'static> = ScriptPlace {
        file: "cm.yaml",
        lines: &[7, 8, 9, 10, 11, 12, 13, 14, 15],
    };
    /// A double-quoted script: lines 1–3 on line 7, the rest folded onto lines 8 and 9.
    const QUOTED: ScriptPlace<'static> = ScriptPlace {
        file: "cm.yaml",
        lines: &[7, 7, 7, 8, 9],
    };

    #[test]
    fn each_script_line_has_its_own_place() {
        assert_eq!(map_positions("<string>:3: boom", QUOTED), "cm.yaml:7: boom");
        assert_eq!(map_positions("<string>:4: x", QUOTED), "cm.yaml:8: x");
        // Lua's `<eof>` line is the last.
        assert_eq!(map_positions("<string>:6: x", QUOTED), "cm.yaml:9: x");
    }

    #[test]
    fn every_chunk_position_is_mapped() {
        assert_eq!(
            map_positions("<string>:156: boom", FILE),
            "lua_configuration/x/Y/trafficRouting.lua:156: boom"
        );
        assert_eq!(
            map_positions(
                "<string>:7: <string>:3: inner\nstack traceback:\n\t<string>:3: in function 'f'",
                CONFIGMAP
            ),
            "cm.yaml:13: cm.yaml:9: inner\nstack traceback:\n\tcm.yaml:9: in function 'f'"
        );
    }

    #[test]
    fn text_that_is_not_a_position_stays() {
        for text in [
            "<string>: odd",
            "<string>:x: y",
            "<string>:0: zero",
            "a <string>:",
            "plain",
        ] {
            assert_eq!(map_positions(text, FILE), text);
        }
    }

    #[test]
    fn the_leading_position_can_be_left_to_the_report() {
        assert_eq!(
            message_after_position("<string>:4: error in <string>:2:", CONFIGMAP),
            "error in cm.yaml:8:"
        );
        assert_eq!(
            message_after_position("<string>: odd", FILE),
            "<string>: odd"
        );
        assert_eq!(message_after_position("no position", FILE), "no position");
    }
}
