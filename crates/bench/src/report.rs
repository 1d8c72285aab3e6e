//! Tables as Markdown, and the small statistics the benchmarks share.

use std::time::Duration;

pub struct Table {
    pub title: String,
    header: Vec<String>,
    rows: Vec<Vec<String>>,
    notes: Vec<String>,
}

impl Table {
    pub fn new(title: &str, header: &[&str]) -> Table {
        Table { title: title.into(), header: header.iter().map(|h| h.to_string()).collect(), rows: vec![], notes: vec![] }
    }
    pub fn row(&mut self, cells: Vec<String>) {
        self.rows.push(cells);
    }
    pub fn note(&mut self, text: String) {
        self.notes.push(text);
    }
    /// Whether any row says a goal was missed.
    pub fn missed(&self) -> bool {
        self.rows.iter().any(|r| r.iter().any(|c| c == "NO"))
    }
    pub fn markdown(&self) -> String {
        let mut s = format!("| {} |\n|{}|\n", self.header.join(" | "), self.header.iter().map(|_| "---").collect::<Vec<_>>().join("|"));
        for r in &self.rows {
            s.push_str(&format!("| {} |\n", r.join(" | ")));
        }
        for n in &self.notes {
            s.push_str(&format!("\n{n}\n"));
        }
        s
    }
}

pub fn median(times: &mut [Duration]) -> Duration {
    times.sort();
    times[times.len() / 2]
}

/// The value at quantile `q` (0..=1) of sorted samples.
pub fn quantile(sorted: &[f64], q: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let i = ((sorted.len() - 1) as f64 * q).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}
