//! Prints the explorer's key table as markdown (`scripts/tables.py keys`
//! puts it in docs/explorer.md; a test checks the two agree).

fn main() {
    print!("{}", spillscope_explorer::keys::markdown_table());
}
