//! The device code the sessions load: two PTX modules of this crate
//! (`fuzz-targets/ptx`), wrapped as fat binaries, with what the model needs
//! to know about them (kernels, parameter layouts, module variables).

use std::sync::OnceLock;

use rcud_emu::ptx::Module;

/// The PTX texts, in catalog order.
const SOURCES: [&str; 2] = [
    include_str!("../../ptx/vectors.ptx"),
    include_str!("../../ptx/misc.ptx"),
];

/// One kernel of a catalog image.
#[derive(Debug, Clone)]
pub(crate) struct Kernel {
    pub(crate) name: String,
    /// `(offset, size)` of each parameter.
    pub(crate) params: Vec<(usize, usize)>,
    /// Bytes of the parameter buffer.
    pub(crate) param_bytes: usize,
}

/// One image of the catalog.
#[derive(Debug, Clone)]
pub(crate) struct Image {
    /// The fat binary a client ships.
    pub(crate) fatbin: Vec<u8>,
    /// Its content hash.
    pub(crate) hash: [u8; 32],
    pub(crate) kernels: Vec<Kernel>,
    /// Module variables: name and size.
    pub(crate) globals: Vec<(String, u64)>,
}

impl Image {
    pub(crate) fn kernel(&self, name: &str) -> Option<&Kernel> {
        self.kernels.iter().find(|k| k.name == name)
    }

    pub(crate) fn global(&self, name: &str) -> Option<u64> {
        self.globals
            .iter()
            .find(|(n, _)| n == name)
            .map(|&(_, size)| size)
    }
}

/// The catalog, built once: each image parsed by the emulator's own front
/// end, so the model knows what the server will find.
pub(crate) fn images() -> &'static [Image] {
    static IMAGES: OnceLock<Vec<Image>> = OnceLock::new();
    IMAGES.get_or_init(|| SOURCES.iter().map(|text| image(text)).collect())
}

fn image(text: &str) -> Image {
    let module = Module::parse(text).unwrap_or_else(|e| panic!("catalog PTX: {e}"));
    if let Some(e) = module.errors().next() {
        panic!("catalog PTX does not translate: {e}");
    }
    let kernels = module
        .kernel_names()
        .into_iter()
        .map(|name| {
            let params = module.kernel_params(&name).expect("params");
            let info = module.kernel_info(&name).expect("info");
            Kernel {
                name,
                params,
                param_bytes: info.param_bytes as usize,
            }
        })
        .collect();
    let globals = module
        .globals()
        .iter()
        .map(|g| (g.name.clone(), g.size))
        .collect();
    let fatbin = rcud_fatbin::image::wrap_ptx(text.as_bytes());
    Image {
        hash: rcud_fatbin::content_hash(&fatbin),
        fatbin,
        kernels,
        globals,
    }
}

/// Every kernel name and every variable name of the catalog, for inputs
/// that pick a name by number.
pub(crate) fn names() -> &'static [String] {
    static NAMES: OnceLock<Vec<String>> = OnceLock::new();
    NAMES.get_or_init(|| {
        images()
            .iter()
            .flat_map(|i| {
                i.kernels
                    .iter()
                    .map(|k| k.name.clone())
                    .chain(i.globals.iter().map(|(n, _)| n.clone()))
            })
            .collect()
    })
}
