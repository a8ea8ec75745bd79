//! Typed kernel handles: every kernel is declared once, in `src/decl.rs`,
//! with the Rust type of each parameter, and launched through one unsafe
//! function, [`Stream::launch`](crate::Stream), whose safety contract is
//! that declaration.
//!
//! A declaration names the kernel (`msm_fill_u32`), the unit that holds it
//! (`msm/scalars.cu`) and its parameters in order; it becomes a constant of
//! type [`Kernel<A>`], `A` the tuple of the parameters' types, so a launch
//! with the wrong number or types of arguments does not compile. Kernels of
//! one shape built per curve or per field (`msm_merge_g1`, `msm_merge_g2`)
//! share one declared parameter list, so generic code picks the curve's
//! kernel from a typed table (`MsmCurve`'s constants) and the compiler
//! checks its arguments once for both.
//!
//! What the compiler cannot see, the declaration's agreement with the
//! kernel's C signature, is checked twice: when a device is opened
//! (`check_params`: the driver's parameter sizes, `cuFuncGetParamInfo`,
//! CUDA 12.4 and later, against the declared ones, for every kernel of every
//! loaded unit), and without a GPU by the test at the end of this file,
//! which reads the units' source text (macros expanded) and compares each
//! declared kernel's parameter count and sizes, and that every kernel in the
//! manifests' sources is declared.

use std::marker::PhantomData;
use std::mem::size_of;

use cuzk_field::limbs::FrLimbs;

use crate::ffi::KernelArgs;

/// A `const T*` kernel parameter: a device address of `T` values (8 bytes).
/// Made from a buffer (`DeviceBuffer::arg`, `arg_at`); an address, not a
/// borrow: what it points to must outlive the kernels that read it (the
/// launch's safety contract).
pub struct DevPtr<T> {
    addr: u64,
    _t: PhantomData<fn() -> T>,
}

/// A `T*` kernel parameter the kernel writes through: a device address of
/// `T` values (8 bytes), made from a `&mut` buffer (`DeviceBuffer::arg_mut`,
/// `arg_mut_at`).
pub struct DevPtrMut<T> {
    addr: u64,
    _t: PhantomData<fn() -> T>,
}

// Derives would require T: Clone.
impl<T> Clone for DevPtr<T> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<T> Copy for DevPtr<T> {}
impl<T> Clone for DevPtrMut<T> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<T> Copy for DevPtrMut<T> {}

impl<T> std::fmt::Debug for DevPtr<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "DevPtr({:#x})", self.addr)
    }
}
impl<T> std::fmt::Debug for DevPtrMut<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "DevPtrMut({:#x})", self.addr)
    }
}

impl<T> DevPtr<T> {
    pub(crate) fn from_raw(addr: u64) -> Self {
        DevPtr {
            addr,
            _t: PhantomData,
        }
    }

    /// The null pointer, for an optional input the kernel skips when null.
    pub(crate) fn null() -> Self {
        Self::from_raw(0)
    }
}

impl<T> DevPtrMut<T> {
    pub(crate) fn from_raw(addr: u64) -> Self {
        DevPtrMut {
            addr,
            _t: PhantomData,
        }
    }

    /// The null pointer, for an optional output the kernel skips when null.
    pub(crate) fn null() -> Self {
        Self::from_raw(0)
    }
}

/// A type a kernel takes by value. The impls below are the whole list:
/// device addresses, `u32`, `u64`, an Fr element, and the NTT's twiddle
/// table set.
pub(crate) trait Param: Copy {
    /// Bytes the kernel's parameter has (what `cuFuncGetParamInfo` reports).
    const SIZE: usize;
    fn push(self, args: &mut KernelArgs);
}

macro_rules! value_params {
    ($($t:ty),*) => {$(
        impl Param for $t {
            const SIZE: usize = size_of::<$t>();
            fn push(self, args: &mut KernelArgs) {
                args.push_value(&self);
            }
        }
    )*};
}
value_params!(u32, u64, FrLimbs, crate::ntt::TablesArg);

impl<T> Param for DevPtr<T> {
    const SIZE: usize = size_of::<u64>();
    fn push(self, args: &mut KernelArgs) {
        args.push_value(&self.addr);
    }
}
impl<T> Param for DevPtrMut<T> {
    const SIZE: usize = size_of::<u64>();
    fn push(self, args: &mut KernelArgs) {
        args.push_value(&self.addr);
    }
}

/// A kernel's whole argument list: a tuple of [`Param`]s, in order.
pub(crate) trait Args {
    /// Each parameter's size in bytes.
    const SIZES: &'static [usize];
    fn push_all(self, args: &mut KernelArgs);
}

macro_rules! tuple_args {
    ($($p:ident),+) => {
        impl<$($p: Param),+> Args for ($($p,)+) {
            const SIZES: &'static [usize] = &[$(<$p as Param>::SIZE),+];
            #[allow(non_snake_case)]
            fn push_all(self, args: &mut KernelArgs) {
                let ($($p,)+) = self;
                $($p.push(args);)+
            }
        }
    };
}
tuple_args!(A);
tuple_args!(A, B);
tuple_args!(A, B, C);
tuple_args!(A, B, C, D);
tuple_args!(A, B, C, D, E);
tuple_args!(A, B, C, D, E, F);
tuple_args!(A, B, C, D, E, F, G);
tuple_args!(A, B, C, D, E, F, G, H);
tuple_args!(A, B, C, D, E, F, G, H, I);
tuple_args!(A, B, C, D, E, F, G, H, I, J);
tuple_args!(A, B, C, D, E, F, G, H, I, J, K);
tuple_args!(A, B, C, D, E, F, G, H, I, J, K, L);
tuple_args!(A, B, C, D, E, F, G, H, I, J, K, L, M);
tuple_args!(A, B, C, D, E, F, G, H, I, J, K, L, M, N);

/// A declared kernel whose arguments are the tuple `A` (see the module
/// docs). Only this crate can launch one.
pub struct Kernel<A> {
    name: &'static str,
    unit: &'static str,
    _args: PhantomData<fn(A)>,
}

impl<A> Clone for Kernel<A> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<A> Copy for Kernel<A> {}

impl<A> std::fmt::Debug for Kernel<A> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} (kernels/{})", self.name, self.unit)
    }
}

/// The kernel's name.
impl<A> std::fmt::Display for Kernel<A> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name)
    }
}

impl<A> Kernel<A> {
    pub(crate) const fn new(name: &'static str, unit: &'static str) -> Self {
        Kernel {
            name,
            unit,
            _args: PhantomData,
        }
    }

    /// The kernel's name in its unit (`extern "C"`).
    pub const fn name(&self) -> &'static str {
        self.name
    }

    /// The unit that holds it, under `kernels/` (`"msm/g1.cu"`).
    pub const fn unit(&self) -> &'static str {
        self.unit
    }
}

/// One declaration as data, for the checks: the kernel, its unit, its
/// parameters' names and sizes.
#[derive(Debug)]
pub(crate) struct Declared {
    pub(crate) name: &'static str,
    pub(crate) unit: &'static str,
    pub(crate) params: &'static [&'static str],
    pub(crate) sizes: &'static [usize],
}

/// Declares kernels: `src/decl.rs` is its one use. Two forms:
///
/// * `kernel "unit.cu" name(param: Type, ...);` — one kernel;
/// * `family Alias<G> = (param: Type, ...) for { "unit.cu" name<G1Type>, ... };`
///   — kernels of one shape (per curve or field): the alias names the
///   argument tuple, generic over the types that differ between them.
///
/// Each becomes a `Kernel` constant named as the kernel, and an entry of
/// `DECLARED`. Attributes (`#[cfg(feature = "tuning")]`) go on a kernel,
/// or on each member of a family, and apply to both.
macro_rules! declare_kernels {
    // One kernel.
    (@items [$($consts:tt)*] [$($decls:tt)*]
        $(#[$m:meta])* kernel $unit:literal $name:ident($($p:ident: $t:ty),* $(,)?);
        $($tail:tt)*
    ) => {
        declare_kernels!(@items
            [$($consts)*
                $(#[$m])*
                #[allow(non_upper_case_globals, dead_code)]
                pub(crate) const $name: $crate::launch::Kernel<($($t,)*)> =
                    $crate::launch::Kernel::new(stringify!($name), $unit);
            ]
            [$($decls)*
                $(#[$m])*
                $crate::launch::Declared {
                    name: stringify!($name),
                    unit: $unit,
                    params: &[$(stringify!($p)),*],
                    sizes: <($($t,)*) as $crate::launch::Args>::SIZES,
                },
            ]
            $($tail)*
        );
    };
    // A family of kernels with one parameter list (captured whole, as it
    // is used once per member).
    (@items [$($consts:tt)*] [$($decls:tt)*]
        family $alias:ident $(<$($g:ident),+>)? = $params:tt for {
            $($(#[$km:meta])* $unit:literal $name:ident $(<$($gt:ty),+>)?),* $(,)?
        };
        $($tail:tt)*
    ) => {
        declare_kernels!(@items
            [$($consts)*
                #[allow(dead_code)]
                pub(crate) type $alias $(<$($g),+>)? = declare_kernels!(@tuple $params);
                $(
                    $(#[$km])*
                    #[allow(non_upper_case_globals, dead_code)]
                    pub(crate) const $name: $crate::launch::Kernel<$alias $(<$($gt),+>)?> =
                        $crate::launch::Kernel::new(stringify!($name), $unit);
                )*
            ]
            [$($decls)*
                $(
                    $(#[$km])*
                    $crate::launch::Declared {
                        name: stringify!($name),
                        unit: $unit,
                        params: declare_kernels!(@names $params),
                        sizes: <$alias $(<$($gt),+>)? as $crate::launch::Args>::SIZES,
                    },
                )*
            ]
            $($tail)*
        );
    };
    (@tuple ($($p:ident: $t:ty),* $(,)?)) => { ($($t,)*) };
    (@names ($($p:ident: $t:ty),* $(,)?)) => { &[$(stringify!($p)),*] };
    (@items [$($consts:tt)*] [$($decls:tt)*]) => {
        $($consts)*
        /// Every declared kernel of this build (its features decide which).
        pub(crate) static DECLARED: &[$crate::launch::Declared] = &[$($decls)*];
    };
    ($($body:tt)*) => {
        declare_kernels!(@items [] [] $($body)*);
    };
}
pub(crate) use declare_kernels;

/// Compares a kernel's declared parameter sizes with the driver's
/// (`actual`); the error names the kernel, the parameter and both sizes.
pub(crate) fn compare_params(d: &Declared, actual: &[usize]) -> Result<(), String> {
    if actual.len() != d.sizes.len() {
        return Err(format!(
            "kernel {} (kernels/{}) takes {} parameters, its Rust declaration {} ({})",
            d.name,
            d.unit,
            actual.len(),
            d.sizes.len(),
            d.params.join(", ")
        ));
    }
    for (i, (&want, &got)) in d.sizes.iter().zip(actual).enumerate() {
        if want != got {
            return Err(format!(
                "kernel {} (kernels/{}): parameter {i} ({}) is {got} bytes, declared {want}",
                d.name, d.unit, d.params[i]
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests;
