//! The pieces of the reports every workload's pages are made of: HTML ([`html`]), SVG plots
//! ([`plot`]), the page pieces ([`page`]: status, provenance, files, CSV) and the generic grid
//! tables of sweeps and comparisons ([`grid`]). Reading a run folder back and writing its
//! outputs is [`crate::run_folder`].

pub mod grid;
pub mod html;
pub mod page;
pub mod plot;

pub use page::{
    csv_text, generic_run_page, grid_runs, no_events_page, page_footer, provenance_rows, status_html, status_text,
    status_word, write, SUMMARY,
};
