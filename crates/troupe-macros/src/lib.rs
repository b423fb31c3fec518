//! Troupe's derive macros. `#[derive(RemoteMessage)]` writes the `troupe_remote::RemoteMessage`
//! impl of a message type: its tag from the type's module path, name and version, and its
//! `nested` registration from its fields. Use it through `troupe_remote::RemoteMessage` (the
//! derive and the trait share the name, as serde's do); `troupe_remote`'s `types` module
//! documents the rules it follows.
//!
//! Rules of the generated code:
//! 1. The tag is `BASE.vN`: `BASE` is `module_path!()::Name`, or `#[remote(tag = "...")]`
//!    when given (for a type that moves between modules or is renamed), `N` is
//!    `#[remote(version = N)]` (default 1). A generic type's tag appends its type parameters'
//!    tags: `BASE.vN<T1,T2>`.
//! 2. `nested` calls `RemoteField::register_carried` for every field type of every variant, so
//!    every `ActorRef<M>` and `ReplyTo<R>` a field holds (directly or inside `Option`, `Vec`,
//!    `Box`, tuples, maps, or another derived message) is registered. A field type that does
//!    not implement `RemoteField` is a compile error, never a silent gap: plain serde data
//!    opts in with an empty `impl RemoteField for MyData {}`.
//! 3. Every type parameter must itself be a `RemoteMessage` (its tag is part of the tag), and
//!    every field type that mentions one must be a `RemoteField`; both become where-clauses.
//!    Lifetime and const parameters are refused (a message is `'static`, and a const would not
//!    be part of the tag).
//! 4. The derive also implements `RemoteField` for the type (registering it and what it
//!    carries), so a derived message can be a field of another.

use proc_macro::TokenStream;
use proc_macro2::{TokenStream as Tokens, TokenTree};
use quote::{format_ident, quote};
use syn::{parse_macro_input, Data, DeriveInput, Fields, GenericParam, LitInt, LitStr, Type};

/// Derives `troupe_remote::RemoteMessage`: the tag from the module path, name and version, and
/// `nested` from the fields (the crate's rules 1-4).
///
/// ```
/// use serde::{Deserialize, Serialize};
/// use troupe::{ActorRef, ReplyTo};
/// use troupe_remote::{tag_of, RemoteField, RemoteMessage};
///
/// #[derive(Serialize, Deserialize)]
/// struct Hint { exact: bool } // plain data: carries nothing
/// impl RemoteField for Hint {}
///
/// #[derive(Serialize, Deserialize, RemoteMessage)]
/// #[remote(tag = "myapp.lookup", version = 2)]
/// enum Lookup {
///     Find { key: String, hint: Hint, reply: ReplyTo<Option<String>> },
///     Watch(Vec<ActorRef<Changed>>), // Changed is registered with Lookup
///     Stop,
/// }
///
/// #[derive(Serialize, Deserialize, RemoteMessage)]
/// struct Changed(String);
///
/// #[derive(Serialize, Deserialize, RemoteMessage)]
/// #[remote(tag = "myapp.envelope")]
/// struct Envelope<B: Send + 'static>(B, ReplyTo<B>);
///
/// assert_eq!(Lookup::TAG, "myapp.lookup.v2");
/// assert!(Changed::TAG.ends_with("::Changed.v1"));
/// assert_eq!(tag_of::<Envelope<u32>>(), "myapp.envelope.v1<troupe.u32>");
/// ```
///
/// Attributes, all optional, in `#[remote(...)]` on the type:
/// - `version = N` (default 1): bump it when the message's meaning changes; nodes that know
///   another version refuse it and the asker gets a typed error.
/// - `tag = "name"`: the tag's base instead of `module_path!()::Name` (keeps the tag when
///   the type moves or is renamed).
#[proc_macro_derive(RemoteMessage, attributes(remote))]
pub fn derive_remote_message(input: TokenStream) -> TokenStream {
    let input = parse_macro_input!(input as DeriveInput);
    expand(&input).unwrap_or_else(syn::Error::into_compile_error).into()
}

struct Attrs {
    version: u64,
    tag: Option<LitStr>,
}

fn attrs(input: &DeriveInput) -> syn::Result<Attrs> {
    let mut out = Attrs { version: 1, tag: None };
    for attr in input.attrs.iter().filter(|a| a.path().is_ident("remote")) {
        attr.parse_nested_meta(|meta| {
            if meta.path.is_ident("version") {
                let lit: LitInt = meta.value()?.parse()?;
                out.version = lit.base10_parse()?;
                Ok(())
            } else if meta.path.is_ident("tag") {
                let lit: LitStr = meta.value()?.parse()?;
                if lit.value().is_empty() {
                    return Err(syn::Error::new(lit.span(), "the tag must not be empty"));
                }
                out.tag = Some(lit);
                Ok(())
            } else {
                Err(meta.error("unknown remote attribute; expected `version = N` or `tag = \"...\"`"))
            }
        })?;
    }
    Ok(out)
}

fn field_types(data: &Data) -> Vec<&Type> {
    fn of(f: &Fields) -> impl Iterator<Item = &Type> {
        f.iter().map(|f| &f.ty)
    }
    match data {
        Data::Struct(s) => of(&s.fields).collect(),
        Data::Enum(e) => e.variants.iter().flat_map(|v| of(&v.fields)).collect(),
        Data::Union(_) => Vec::new(),
    }
}

/// True when `tokens` name one of `params` anywhere.
fn mentions(tokens: Tokens, params: &[syn::Ident]) -> bool {
    tokens.into_iter().any(|t| match t {
        TokenTree::Ident(i) => params.contains(&i),
        TokenTree::Group(g) => mentions(g.stream(), params),
        _ => false,
    })
}

fn expand(input: &DeriveInput) -> syn::Result<Tokens> {
    if let Data::Union(u) = &input.data {
        return Err(syn::Error::new(u.union_token.span, "RemoteMessage cannot be derived for a union"));
    }
    let a = attrs(input)?;
    let name = &input.ident;
    let krate = quote!(::troupe_remote);
    let suffix = format!(".v{}", a.version);
    let base = match &a.tag {
        Some(t) => quote!(#t),
        None => {
            let n = format!("::{name}");
            quote!(::core::concat!(::core::module_path!(), #n))
        }
    };
    let mut params = Vec::new();
    for p in &input.generics.params {
        match p {
            GenericParam::Type(t) => params.push(t.ident.clone()),
            GenericParam::Lifetime(l) => {
                return Err(syn::Error::new_spanned(l, "a remote message cannot borrow: it must be 'static"))
            }
            GenericParam::Const(c) => {
                return Err(syn::Error::new_spanned(c, "RemoteMessage cannot be derived for const parameters"))
            }
        }
    }
    let fields = field_types(&input.data);
    let (impl_g, ty_g, where_g) = input.generics.split_for_impl();
    let mut preds: Vec<Tokens> = where_g.map(|w| w.predicates.iter().map(|p| quote!(#p)).collect()).unwrap_or_default();
    for p in &params {
        preds.push(quote!(#p: #krate::RemoteMessage));
    }
    let mut seen = Vec::new();
    for ty in &fields {
        let s = quote!(#ty).to_string();
        if mentions(quote!(#ty), &params) && !seen.contains(&s) {
            preds.push(quote!(#ty: #krate::RemoteField));
            seen.push(s);
        }
    }
    let where_clause = if preds.is_empty() { quote!() } else { quote!(where #(#preds,)*) };
    let tag_fn = if params.is_empty() {
        quote!()
    } else {
        let parts = params.iter().map(|p| quote!(<#p as #krate::RemoteMessage>::tag()));
        let fmt = format!("{{}}<{}>", vec!["{}"; params.len()].join(","));
        quote! {
            fn tag() -> ::std::borrow::Cow<'static, str> {
                ::std::borrow::Cow::Owned(::std::format!(#fmt, <Self as #krate::RemoteMessage>::TAG, #(#parts),*))
            }
        }
    };
    let n = format_ident!("__troupe_nested");
    let regs = fields.iter().map(|ty| quote!(<#ty as #krate::RemoteField>::register_carried(#n);));
    Ok(quote! {
        impl #impl_g #krate::RemoteMessage for #name #ty_g #where_clause {
            const TAG: &'static str = ::core::concat!(#base, #suffix);
            #tag_fn
            fn nested(#n: &mut #krate::Nested) {
                #(#regs)*
            }
        }
        impl #impl_g #krate::RemoteField for #name #ty_g #where_clause {
            fn register_carried(#n: &mut #krate::Nested) {
                #n.add::<Self>();
            }
        }
    })
}
