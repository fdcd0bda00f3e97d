//! The PTX front end of the emulated device: lexer, parser and translator
//! (`rcud_emu::ptx::Module::parse`), which the server runs on the PTX of
//! every fat binary a client loads.

use std::collections::HashMap;

use rcud_emu::ptx::{Module, PtxErrorKind, Space};

/// Parses and translates `data` (as text, invalid UTF-8 replaced) and asks
/// the module everything a loader and a launch ask: kernels, their
/// parameters and limits, translation errors, module variables and their
/// initial bytes. The kernels' parameter layouts must agree with what the
/// client's PTX reader (`rcud_fatbin::ptx`) finds in the same text, since
/// the client packs the arguments that the server unpacks.
pub fn ptx(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    let module = match Module::parse(&text) {
        Ok(m) => m,
        Err(e) => {
            // Errors render, with a line inside the text.
            let shown = e.to_string();
            assert!(!shown.is_empty());
            assert!(e.line() as usize <= text.lines().count() + 1, "{shown}");
            if e.kind() == PtxErrorKind::Unsupported {
                assert!(shown.contains("unsupported"), "{shown}");
            }
            return;
        }
    };
    for name in module.kernel_names() {
        let info = module.kernel_info(&name).expect("a listed kernel has info");
        let params = module
            .kernel_params(&name)
            .expect("a listed kernel has params");
        for &(offset, size) in &params {
            assert!(
                offset + size <= info.param_bytes as usize,
                "{name}: parameter at {offset}+{size} past {}",
                info.param_bytes
            );
        }
        assert!((1..=1024).contains(&info.max_threads), "{info:?}");
        if let Some(e) = module.kernel_error(&name) {
            assert!(!e.to_string().is_empty());
        }
        let layout = rcud_fatbin::ptx::entry_param_layout(&text, &name);
        if let Ok(Some(layout)) = layout {
            let theirs: Vec<(usize, usize)> =
                layout.params.iter().map(|p| (p.offset, p.size)).collect();
            assert_eq!(
                theirs, params,
                "kernel {name}: the client's and the server's parameter layouts differ"
            );
        }
    }
    for e in module.errors() {
        let _ = e.to_string();
    }
    let globals = module.globals();
    let addresses: HashMap<&str, u64> = globals
        .iter()
        .enumerate()
        .map(|(i, g)| (g.name.as_str(), 0x7000_0000_0000 + ((i as u64) << 20)))
        .collect();
    for g in globals {
        assert!(
            matches!(g.space, Space::Global | Space::Const),
            "{:?}",
            g.space
        );
        assert!(g.init.len() as u64 <= g.size, "variable {}", g.name);
        if let Some(bytes) = g.init_with(|name| addresses.get(name).copied()) {
            assert_eq!(bytes.len(), g.init.len());
        }
    }
}
