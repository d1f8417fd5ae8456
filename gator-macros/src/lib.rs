//! TEMPORARY STUB so the workspace compiles while the real macro is written (helper-2 replaces this file).
use proc_macro::TokenStream;
/// stub
#[proc_macro_attribute]
pub fn job(_args: TokenStream, item: TokenStream) -> TokenStream {
    item
}
