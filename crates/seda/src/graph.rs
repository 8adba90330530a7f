//! The stage graph with per-edge event counts, as DOT (Graphviz) or JSON.

use std::fmt::Write;

use serde::Serialize;

/// The runtime's stages and the events that flowed between them.
#[derive(Debug, Clone, Serialize)]
pub struct Graph {
    /// Stages.
    pub nodes: Vec<GraphNode>,
    /// Hand-offs with their event counts; `from` is `"outside"` for events enqueued by threads
    /// that are not running a stage's handler.
    pub edges: Vec<GraphEdge>,
}

/// One stage in the graph.
#[derive(Debug, Clone, Serialize)]
pub struct GraphNode {
    /// Stage name.
    pub name: String,
    /// "queued", "domain" or "inline".
    pub mode: &'static str,
    /// The pool that runs it.
    pub pool: Option<String>,
}

/// Events admitted into `to` that were enqueued while `from` ran.
#[derive(Debug, Clone, Serialize)]
pub struct GraphEdge {
    /// Source stage (or "outside").
    pub from: String,
    /// Destination stage.
    pub to: String,
    /// Events admitted along this edge.
    pub events: u64,
}

impl Graph {
    /// The graph in Graphviz's DOT language, edges labelled with event counts.
    pub fn to_dot(&self) -> String {
        let mut out = String::from("digraph seda {\n  rankdir=LR;\n  node [shape=box];\n");
        if self.edges.iter().any(|e| e.from == "outside") {
            out.push_str("  \"outside\" [shape=plaintext];\n");
        }
        for n in &self.nodes {
            let _ = writeln!(
                out,
                "  {} [label=\"{}\\n({})\"];",
                quote(&n.name),
                escape(&n.name),
                n.mode
            );
        }
        for e in &self.edges {
            let _ = writeln!(
                out,
                "  {} -> {} [label=\"{}\"];",
                quote(&e.from),
                quote(&e.to),
                e.events
            );
        }
        out.push_str("}\n");
        out
    }
}

fn escape(s: &str) -> String {
    s.replace('\\', "\\\\").replace('"', "\\\"")
}

fn quote(s: &str) -> String {
    format!("\"{}\"", escape(s))
}
