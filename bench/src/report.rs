//! The results: one Markdown table per section, with notes, printed and written to a file.

use std::fmt::Write as _;

/// One section of the results (one table).
#[derive(Clone, Debug, Default)]
pub struct Section {
    /// Heading, e.g. `1. tasks/get`.
    pub title: String,
    /// Column names.
    pub header: Vec<String>,
    /// Rows, as many cells as columns.
    pub rows: Vec<Vec<String>>,
    /// Lines printed under the table (method details, checks, what was not measured).
    pub notes: Vec<String>,
    /// Further tables of the same section, printed after the notes.
    pub tables: Vec<Section>,
}

impl Section {
    /// An empty section with `title` and `header`.
    pub fn new(title: &str, header: &[&str]) -> Self {
        Self {
            title: title.to_owned(),
            header: header.iter().map(|h| (*h).to_owned()).collect(),
            ..Self::default()
        }
    }

    /// Adds a row.
    pub fn row(&mut self, cells: Vec<String>) {
        self.rows.push(cells);
    }

    /// Adds a note.
    pub fn note(&mut self, note: impl Into<String>) {
        self.notes.push(note.into());
    }

    /// The section as Markdown.
    pub fn to_markdown(&self) -> String {
        let mut out = format!("### {}\n\n", self.title);
        if !self.header.is_empty() {
            let _ = writeln!(out, "| {} |", self.header.join(" | "));
            let _ = writeln!(out, "|{}", "---|".repeat(self.header.len()));
            for row in &self.rows {
                let _ = writeln!(out, "| {} |", row.join(" | "));
            }
            out.push('\n');
        }
        for note in &self.notes {
            let _ = writeln!(out, "- {note}");
        }
        if !self.notes.is_empty() {
            out.push('\n');
        }
        for table in &self.tables {
            out.push_str(&table.to_markdown().replacen("### ", "#### ", 1));
        }
        out
    }
}

/// Every section of one run, with a header naming the machine.
#[derive(Debug, Default)]
pub struct Report {
    /// Lines before the first section.
    pub preamble: Vec<String>,
    /// The sections, in the order they ran.
    pub sections: Vec<Section>,
}

impl Report {
    /// The whole report as Markdown.
    pub fn to_markdown(&self) -> String {
        let mut out = String::from("## mto-bench results\n\n");
        for line in &self.preamble {
            let _ = writeln!(out, "{line}");
        }
        out.push('\n');
        for section in &self.sections {
            out.push_str(&section.to_markdown());
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sections_render_as_markdown_tables() {
        let mut section = Section::new("1. x", &["a", "b"]);
        section.row(vec!["1".into(), "2".into()]);
        section.note("n");
        assert_eq!(
            section.to_markdown(),
            "### 1. x\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\n- n\n\n"
        );
    }
}
