//! `#[perflens::measure_all]` on impl blocks and inline modules, with
//! `#[perflens::skip]`.
#![deny(warnings)]

struct Shape {
    sides: u32,
}

#[perflens::measure_all]
impl Shape {
    fn new(sides: u32) -> Self {
        Shape { sides }
    }
    fn sides(&self) -> u32 {
        self.sides
    }
    #[perflens::skip]
    fn hidden(&self) -> u32 {
        self.sides * 2
    }
    const fn constant() -> u32 {
        4
    }
    #[perflens::measure(label = "shape area")]
    fn area(&self) -> u32 {
        self.sides * 10
    }
    async fn later(&self) -> u32 {
        self.sides
    }
}

#[perflens::measure_all]
impl std::fmt::Display for Shape {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}-gon", self.sides)
    }
}

#[perflens::measure_all]
mod app {
    use perflens::skip;

    pub fn run() -> u32 {
        helper() + Engine.start() + deeper::go() + deeper::quiet() + off::nothing()
    }

    fn helper() -> u32 {
        1
    }

    pub struct Engine;

    impl Engine {
        pub fn start(&self) -> u32 {
            2
        }
    }

    pub mod deeper {
        use perflens::skip;

        pub fn go() -> u32 {
            3
        }

        #[skip]
        pub fn quiet() -> u32 {
            4
        }
    }

    #[skip]
    pub mod off {
        pub fn nothing() -> u32 {
            5
        }
    }

    pub const fn limit() -> u32 {
        6
    }
}

/// The row name without the crate (trybuild names the crate).
fn short(name: &str) -> &str {
    name.split_once("::").map_or(name, |(_, rest)| rest)
}

fn main() {
    let session = perflens::Session::builder().ignore_env().start().unwrap();
    let s = Shape::new(3);
    assert_eq!(s.sides() + s.hidden() + Shape::constant() + s.area(), 43);
    assert_eq!(s.to_string(), "3-gon");
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    assert_eq!(rt.block_on(s.later()), 3);
    assert_eq!(app::run() + app::limit(), 21);
    let report = session.finish();

    let mut names: Vec<&str> = report.functions.iter().map(|f| short(&f.name)).collect();
    names.sort_unstable();
    let mut expected = vec![
        "Shape::new",
        "Shape::sides",
        "shape area",
        "Shape::later",
        "app::run",
        "app::helper",
        "app::Engine::start",
        "app::deeper::go",
        "<Shape as Display>::fmt",
    ];
    expected.sort_unstable();
    assert_eq!(names, expected);
}
