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
        pub fn go() -> u32 {
            3
        }

        #[super::skip]
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

fn main() {
    let session = perflens::Session::builder().ignore_env().start().unwrap();
    let s = Shape::new(3);
    assert_eq!(s.sides() + s.hidden() + Shape::constant() + s.area(), 43);
    assert_eq!(s.to_string(), "3-gon");
    let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
    assert_eq!(rt.block_on(s.later()), 3);
    assert_eq!(app::run() + app::limit(), 21);
    let report = session.finish();

    let mut names: Vec<&str> = report.functions.iter().map(|f| f.name.as_str()).collect();
    names.sort_unstable();
    let mut expected = vec![
        "measure_all::Shape::new",
        "measure_all::Shape::sides",
        "shape area",
        "measure_all::Shape::later",
        "measure_all::app::run",
        "measure_all::app::helper",
        "measure_all::app::Engine::start",
        "measure_all::app::deeper::go",
    ];
    expected.sort_unstable();
    let fmt = names.iter().position(|n| n.ends_with("::fmt")).expect("Display::fmt is measured");
    names.remove(fmt);
    assert_eq!(names, expected);
}
