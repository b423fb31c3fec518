//! HTML pieces of the reports: escaping, tables and the page shell. Pages are self-contained
//! (inline SVG and CSS, no scripts, nothing fetched), so report.html opens offline.

use std::fmt::Write;

/// Escapes text for HTML.
pub fn escape(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => o.push_str("&amp;"),
            '<' => o.push_str("&lt;"),
            '>' => o.push_str("&gt;"),
            '"' => o.push_str("&quot;"),
            '\'' => o.push_str("&#39;"),
            c => o.push(c),
        }
    }
    o
}

/// A page under construction.
pub struct Page {
    body: String,
    title: String,
}

impl Page {
    /// A page with a title.
    pub fn new(title: &str) -> Page {
        let mut p = Page { body: String::new(), title: title.into() };
        let _ = writeln!(p.body, "<h1>{}</h1>", escape(title));
        p
    }

    /// A section heading.
    pub fn h2(&mut self, text: &str) {
        let _ = writeln!(self.body, "<h2>{}</h2>", escape(text));
    }

    /// A paragraph of plain text.
    pub fn p(&mut self, text: &str) {
        let _ = writeln!(self.body, "<p>{}</p>", escape(text));
    }

    /// A paragraph of trusted HTML.
    pub fn raw(&mut self, html: &str) {
        self.body.push_str(html);
        self.body.push('\n');
    }

    /// A two-column key/value table.
    pub fn kv(&mut self, rows: &[(String, String)]) {
        self.body.push_str("<table class=\"kv\">\n");
        for (k, v) in rows {
            let _ = writeln!(self.body, "<tr><th>{}</th><td>{}</td></tr>", escape(k), escape(v));
        }
        self.body.push_str("</table>\n");
    }

    /// A table with a header row; cells are plain text except those starting with `<a `.
    pub fn table(&mut self, header: &[&str], rows: &[Vec<String>]) {
        self.body.push_str("<table class=\"grid\">\n<tr>");
        for h in header {
            let _ = write!(self.body, "<th>{}</th>", escape(h));
        }
        self.body.push_str("</tr>\n");
        for r in rows {
            self.body.push_str("<tr>");
            for c in r {
                if c.starts_with("<a ") {
                    let _ = write!(self.body, "<td>{c}</td>");
                } else {
                    let _ = write!(self.body, "<td>{}</td>", escape(c));
                }
            }
            self.body.push_str("</tr>\n");
        }
        self.body.push_str("</table>\n");
    }

    /// An inline SVG figure with a caption.
    pub fn figure(&mut self, svg: &str, caption: &str) {
        let svg = svg.trim_start_matches(|c| c != '<');
        let svg = match svg.find("<svg") {
            Some(i) => &svg[i..],
            None => svg,
        };
        let _ = writeln!(self.body, "<figure>{svg}<figcaption>{}</figcaption></figure>", escape(caption));
    }

    /// The finished document.
    pub fn finish(self) -> String {
        format!(
            "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
             <title>{}</title>\n<style>{CSS}</style></head>\n<body>\n{}</body></html>\n",
            escape(&self.title),
            self.body
        )
    }
}

/// A link to a file next to the page.
pub fn link(href: &str, text: &str) -> String {
    format!("<a href=\"{}\">{}</a>", escape(href), escape(text))
}

const CSS: &str = "body{font-family:sans-serif;max-width:1100px;margin:2em auto;color:#222}\
table{border-collapse:collapse;margin:1em 0}th,td{border:1px solid #ccc;padding:3px 8px;\
text-align:left;font-size:14px}table.kv th{background:#f4f4f4}table.grid th{background:#eef}\
figure{margin:1em 0}figcaption{font-size:13px;color:#555}.ok{color:#070}.failed{color:#b00}";
