//! Function inputs: taking a handle at entry, refusing inputs that share
//! storage, and writing final values back into the caller's tensors at exit.

use std::collections::HashMap;

use crate::element::{Element, Scalar};
use crate::layout::Layout;
use crate::tensor::Tensor;
use crate::trace::ToArg;

use super::apply::{cast_mut, cast_ref, dispatch_f32, same};
use super::tracked::Tracked;

/// A handle to an input tensor (same storage and trace identity), which the
/// functionalized body rebinds as it computes new values.
pub fn input<T: Element>(t: &Tensor<T>) -> Tensor<T> {
    t.handle()
}

/// A handle to each tensor of an input collection (`params: &mut [Tensor]`,
/// a `Vec<Tensor>`), in order: [`input`] of each, in one call.
///
/// ```
/// use funcz_runtime::{Tensor, rt};
/// let ps = vec![Tensor::<f32>::ones(&[2]), Tensor::zeros(&[3])];
/// let hs = rt::inputs(&ps[..]);
/// assert_eq!(hs.len(), 2);
/// assert!(hs[0].same_storage(&ps[0]) && hs[1].same_storage(&ps[1]));
/// ```
pub fn inputs<T: Element>(ts: &[Tensor<T>]) -> Vec<Tensor<T>> {
    ts.iter().map(Tensor::handle).collect()
}

/// [`inputs`] of a slice input (`params: &mut [Tensor]`, `&[Tensor]`), as
/// a boxed slice: the body indexes and iterates it as the slice it was
/// (a `Vec` would add a `Deref` call to each use in an unoptimized build),
/// and the write-back reads it as `&*params`.
///
/// ```
/// use funcz_runtime::{Tensor, rt};
/// let ps = [Tensor::<f32>::ones(&[2]), Tensor::zeros(&[3])];
/// let mut hs = rt::input_slice(&ps);
/// hs[1] = Tensor::ones(&[3]);
/// assert!(hs[0].same_storage(&ps[0]) && !hs[1].same_storage(&ps[1]));
/// rt::write_back_all(&ps, &*hs);
/// assert_eq!(ps[1].to_vec(), vec![1.0; 3]);
/// ```
pub fn input_slice<T: Element>(ts: &[Tensor<T>]) -> Box<[Tensor<T>]> {
    ts.iter().map(Tensor::handle).collect()
}

/// A handle to a tensor a struct or tuple field holds (`self.cache`,
/// `c.0`), taken at entry: the functionalized body tracks the field like a
/// tensor input, and its final value is written back into this handle's
/// storage (the field's) at every exit.
///
/// ```
/// let t = funcz_runtime::Tensor::<f32>::zeros(&[2]);
/// let pair = (&t, 3usize);
/// let h = funcz_runtime::rt::place_handle(&pair.0);
/// assert!(h.same_storage(&t));
/// ```
pub fn place_handle<T: Element, R: AsRef<Tensor<T>> + ?Sized>(field: &R) -> Tensor<T> {
    field.as_ref().handle()
}

/// Checks, before an in-place op on a receiver #[functionalize] cannot name
/// (`a.add(1.0).sqrt_()`, `f(x).relu_()`), that the receiver is a fresh
/// temporary nobody else can see: its storage has no other handle. Then the
/// functional op alone gives the original's value. Otherwise the receiver
/// is a view of something the caller can observe (`s.w.narrow(0, 0, 1)`
/// of a field the macro does not track, a value returned by a helper), and
/// dropping the mutation would silently lose it: panic instead.
///
/// ```
/// let t = funcz_runtime::Tensor::<f32>::zeros(&[2]);
/// funcz_runtime::rt::check_temp("add_", "t.add(1.0)", &t.add(1.0));
/// let r = std::panic::catch_unwind(|| funcz_runtime::rt::check_temp("add_", "t.narrow(0, 0, 1)", &t.narrow(0, 0, 1)));
/// assert!(r.is_err());
/// ```
#[track_caller]
pub fn check_temp<T: Element, R: AsRef<Tensor<T>> + ?Sized>(op: &str, receiver: &str, value: &R) {
    let value = value.as_ref();
    let n = value.storage_use_count();
    if n > 1 {
        panic!(
            "funcz: in-place `{op}` on `{receiver}`: #[functionalize] cannot tell where this receiver's storage \
             comes from, and it shares that storage with {} other handle(s) (shape {:?}), so the mutation would \
             not reach them. help: bind the tensor it is a view of to a variable or parameter of type `Tensor` \
             (a `&Tensor`/`&mut Tensor` parameter, a `let`, or a struct field reached from a parameter or `self`) \
             and make the view from that, or `.clone()` the receiver if the mutation must not be seen",
            n - 1,
            value.shape()
        );
    }
}

/// The identity of the tensor a variable holds, taken around a call the
/// macro cannot see that receives the variable by `&mut` (`mem::swap(x,
/// y)`): if the call replaced the tensor, [`rebind`] starts the variable
/// over as a new root.
pub fn identity<T: Element>(t: &Tensor<T>) -> crate::tensor::TensorId {
    t.id()
}

/// A call replaced the tensor `name` holds (its identity changed): the
/// variable gets its own copy of the new tensor (which may be another
/// input's, whose write-back must not see it change) and its state starts
/// over as a new root, whose final value the exit writes back as usual. Panics if views of the old tensor are live (`has_views`):
/// they would keep aliasing the tensor the variable no longer holds.
#[track_caller]
pub fn rebind<T: Element>(name: &str, t: &mut Tensor<T>, state: &mut Tracked, has_views: bool) {
    if has_views {
        panic!(
            "funcz: a call replaced the tensor `{name}` holds (shape {:?}) while views of the old one are in use; \
             #[functionalize] cannot keep them aliasing it. help: make the views after the call, or swap the \
             values with in-place ops (`a.copy_(&b)`)",
            t.shape()
        );
    }
    *t = t.clone();
    *state = Tracked::root(t);
}

/// Something that identifies an input's storage, for
/// [`check_inputs_disjoint`].
pub trait InputKey {
    /// Storage addresses of the tensors in this input.
    fn storage_keys(&self) -> Vec<usize> {
        let mut keys = Vec::new();
        self.visit_keys(&mut |k| keys.push(k));
        keys
    }

    /// Calls `f` with the storage address of each tensor in this input, in
    /// order (without allocating).
    fn visit_keys(&self, f: &mut dyn FnMut(usize));

    /// The storage address of this input if it is one tensor (`None` for
    /// collections): [`check_inputs_disjoint`]'s fast path (the buffer it
    /// holds, as [`visit_keys`](Self::visit_keys) gives it).
    fn single_key(&self) -> Option<usize> {
        None
    }

    /// The storage address, identity and layout of this input if it is one
    /// tensor (`None` for collections), where its elements are in the
    /// original program (a `*_copy` made in place of a view gives the
    /// view's base and layout), for
    /// [`check_args_overlap`](super::check_args_overlap).
    fn single_tensor(&self) -> Option<(usize, crate::tensor::TensorId, &Layout)> {
        None
    }
}

// Any dtype, masks included: a `&Tensor<bool>` parameter is an input too.
impl<T: Scalar> InputKey for Tensor<T> {
    fn visit_keys(&self, f: &mut dyn FnMut(usize)) {
        f(self.storage_key())
    }
    fn single_key(&self) -> Option<usize> {
        Some(self.storage_key())
    }
    fn single_tensor(&self) -> Option<(usize, crate::tensor::TensorId, &Layout)> {
        let (key, layout) = crate::ops::overlap::place(self);
        Some((key, self.id, layout))
    }
}

impl<X: InputKey> InputKey for [X] {
    fn visit_keys(&self, f: &mut dyn FnMut(usize)) {
        for t in self {
            t.visit_keys(f);
        }
    }
}

impl<X: InputKey> InputKey for Vec<X> {
    fn visit_keys(&self, f: &mut dyn FnMut(usize)) {
        self.as_slice().visit_keys(f)
    }
}

impl<X: InputKey> InputKey for Option<X> {
    fn visit_keys(&self, f: &mut dyn FnMut(usize)) {
        if let Some(x) = self {
            x.visit_keys(f)
        }
    }
}

impl<X: InputKey + ?Sized> InputKey for &X {
    fn visit_keys(&self, f: &mut dyn FnMut(usize)) {
        (**self).visit_keys(f)
    }
    fn single_key(&self) -> Option<usize> {
        (**self).single_key()
    }
    fn single_tensor(&self) -> Option<(usize, crate::tensor::TensorId, &Layout)> {
        (**self).single_tensor()
    }
}

impl<X: InputKey + ?Sized> InputKey for &mut X {
    fn visit_keys(&self, f: &mut dyn FnMut(usize)) {
        (**self).visit_keys(f)
    }
    fn single_key(&self) -> Option<usize> {
        (**self).single_key()
    }
    fn single_tensor(&self) -> Option<(usize, crate::tensor::TensorId, &Layout)> {
        (**self).single_tensor()
    }
}

/// Panics if two tensor inputs of `function` share storage: the
/// functionalized body treats each input as an independent root, so a
/// mutation of one would not be seen through the other (PyTorch's
/// functionalize silently diverges here; funcz refuses).
///
/// ```
/// use funcz_runtime::rt::{check_inputs_disjoint, InputKey};
/// use funcz_runtime::Tensor;
/// let (a, b) = (Tensor::<f32>::zeros(&[2]), Tensor::<f32>::zeros(&[2]));
/// check_inputs_disjoint("f", &[("a", &a as &dyn InputKey), ("b", &b as &dyn InputKey)]);
/// let shared = a.narrow(0, 0, 1);
/// let r = std::panic::catch_unwind(|| {
///     check_inputs_disjoint("f", &[("a", &a as &dyn InputKey), ("s", &shared as &dyn InputKey)])
/// });
/// assert!(r.is_err());
/// ```
///
/// The panic points at the caller (`#[track_caller]`): for a
/// `#[functionalize]` function, the function's own source, not funcz's.
#[track_caller]
#[inline]
pub fn check_inputs_disjoint(function: &str, inputs: &[(&str, &dyn InputKey)]) {
    // Two tensors (the common case): one comparison, inlined into the
    // generated function, where the inputs' types are known (so the
    // `single_key` calls are direct and the slice is never built).
    if let [(_, a), (_, b)] = inputs
        && let (Some(x), Some(y)) = (a.single_key(), b.single_key())
        && x != y
    {
        return;
    }
    check_inputs_disjoint_slow(function, inputs)
}

/// The inputs of a function, as a tuple of references to [`InputKey`]s (up
/// to 12), for [`check_inputs_disjoint_of`].
pub trait InputKeys {
    /// [`check_inputs_disjoint`] of these inputs, named in order by the
    /// comma-separated `names` (read only to report a clash). Its panic
    /// points at the caller of every implementation (`#[track_caller]`
    /// here applies to them all).
    #[track_caller]
    fn check_disjoint(&self, function: &str, names: &str);
}

macro_rules! input_keys_tuple {
    ($($t:ident $i:tt),+) => {
        impl<$($t: InputKey + ?Sized),+> InputKeys for ($(&$t,)+) {
            #[track_caller]
            #[inline]
            fn check_disjoint(&self, function: &str, names: &str) {
                check_inputs_disjoint_slow(
                    function,
                    &Joined { names, keys: &[$(&self.$i as &dyn InputKey),+] },
                )
            }
        }
    };
}

input_keys_tuple!(A 0);

// Two inputs (the common case) compare their storages before building the
// slice of names and keys, which only a clash or a collection input needs:
// inlined into the generated function, the test is two loads and a
// comparison.
impl<A: InputKey + ?Sized, B: InputKey + ?Sized> InputKeys for (&A, &B) {
    #[track_caller]
    #[inline]
    fn check_disjoint(&self, function: &str, names: &str) {
        if let (Some(x), Some(y)) = (self.0.single_key(), self.1.single_key())
            && x != y
        {
            return;
        }
        check_pair_slow(function, names, self.0, self.1)
    }
}

/// The two-input [`InputKeys::check_disjoint`] past its test.
#[cold]
#[track_caller]
#[inline(never)]
fn check_pair_slow<A: InputKey + ?Sized, B: InputKey + ?Sized>(
    function: &str,
    names: &str,
    a: &A,
    b: &B,
) {
    check_inputs_disjoint_slow(
        function,
        &Joined {
            names,
            keys: &[&a as &dyn InputKey, &b as &dyn InputKey],
        },
    )
}

input_keys_tuple!(A 0, B 1, C 2);
input_keys_tuple!(A 0, B 1, C 2, D 3);
input_keys_tuple!(A 0, B 1, C 2, D 3, E 4);
input_keys_tuple!(A 0, B 1, C 2, D 3, E 4, F 5);
input_keys_tuple!(A 0, B 1, C 2, D 3, E 4, F 5, G 6);
input_keys_tuple!(A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7);
input_keys_tuple!(A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7, I 8);
input_keys_tuple!(A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7, I 8, J 9);
input_keys_tuple!(A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7, I 8, J 9, K 10);
input_keys_tuple!(A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7, I 8, J 9, K 10, L 11);

/// [`check_inputs_disjoint`] of a tuple of inputs named by the
/// comma-separated `names` (as many as the tuple has): what
/// `#[functionalize]` emits for up to 12 inputs. The `&dyn InputKey`
/// coercions are made here, once, instead of in every generated function,
/// and the names are one string literal, not an array (both: cheaper debug
/// builds of annotated code).
///
/// ```
/// use funcz_runtime::rt::check_inputs_disjoint_of;
/// use funcz_runtime::Tensor;
/// let (a, b) = (Tensor::<f32>::zeros(&[2]), Tensor::<f32>::zeros(&[2]));
/// check_inputs_disjoint_of("f", "a,b", (&a, &b));
/// let shared = a.narrow(0, 0, 1);
/// let r = std::panic::catch_unwind(|| check_inputs_disjoint_of("f", "a,s", (&a, &shared)));
/// assert!(r.is_err());
/// ```
///
/// The panic points at the caller (`#[track_caller]`), as
/// [`check_inputs_disjoint`]'s.
#[track_caller]
#[inline]
pub fn check_inputs_disjoint_of<K: InputKeys>(function: &str, names: &str, inputs: K) {
    inputs.check_disjoint(function, names)
}

/// The inputs a disjointness check compares: their keys, and their names
/// (read only to report a clash).
trait Named {
    fn len(&self) -> usize;
    fn key(&self, i: usize) -> &dyn InputKey;
    fn name(&self, i: usize) -> &str;
}

impl Named for [(&str, &dyn InputKey)] {
    fn len(&self) -> usize {
        <[_]>::len(self)
    }
    fn key(&self, i: usize) -> &dyn InputKey {
        self[i].1
    }
    fn name(&self, i: usize) -> &str {
        self[i].0
    }
}

/// Keys named by one comma-separated list, as generated code passes them.
struct Joined<'a> {
    names: &'a str,
    keys: &'a [&'a dyn InputKey],
}

impl Named for Joined<'_> {
    fn len(&self) -> usize {
        self.keys.len()
    }
    fn key(&self, i: usize) -> &dyn InputKey {
        self.keys[i]
    }
    fn name(&self, i: usize) -> &str {
        self.names.split(',').nth(i).unwrap_or("?")
    }
}

/// [`check_inputs_disjoint`] past its two-tensor test.
#[track_caller]
#[inline(never)]
fn check_inputs_disjoint_slow(function: &str, inputs: &(impl Named + ?Sized)) {
    // The common case, a few tensors, without allocating: compare each
    // storage with the ones before it.
    const FEW: usize = 16;
    let mut keys = [0usize; FEW];
    let mut n = 0;
    let mut clash = false;
    // Faster still when every input is one tensor (no callback per key).
    if inputs.len() <= FEW {
        for i in 0..inputs.len() {
            let Some(key) = inputs.key(i).single_key() else {
                break;
            };
            clash |= keys[..n].contains(&key);
            keys[n] = key;
            n += 1;
        }
        if n == inputs.len() && !clash {
            return;
        }
        (n, clash) = (0, false);
    }
    for i in 0..inputs.len() {
        inputs.key(i).visit_keys(&mut |key| {
            if n < FEW {
                clash |= keys[..n].contains(&key);
                keys[n] = key;
            }
            n += 1;
        });
    }
    if n <= FEW && !clash {
        return;
    }
    let mut seen: HashMap<usize, (&str, usize)> = HashMap::new();
    for i in 0..inputs.len() {
        let name = inputs.name(i);
        for (k, key) in inputs.key(i).storage_keys().into_iter().enumerate() {
            if let Some((other, j)) = seen.insert(key, (name, k)) {
                let a = if other == name {
                    format!("`{other}[{j}]`")
                } else {
                    format!("`{other}`")
                };
                let b = if other == name {
                    format!("`{name}[{k}]`")
                } else {
                    format!("`{name}`")
                };
                panic!(
                    "funcz: {function}: inputs {a} and {b} share storage; a functionalized function that mutates \
                     its inputs needs them to be independent. help: pass a .clone() of one of them"
                );
            }
        }
    }
}

dispatch_f32! {
    /// Copies `value` into the caller's tensor `dst` if the body replaced it
    /// (recorded as `copy_(dst, value)`); a no-op when `value` is still the
    /// input itself. When the body computed its updates in the caller's buffer
    /// (see [`Tracked::input`]), `value` already is `dst`'s data in `dst`'s
    /// layout: the `copy_` is recorded without moving any data.
    pub fn write_back<T: Element>(
        dst: &Tensor<T> => cast_ref,
        value: &Tensor<T> => cast_ref,
    ) = write_back_any, write_back_f32;
}

/// The generic body of [`write_back`].
fn write_back_any<T: Element>(dst: &Tensor<T>, value: &Tensor<T>) {
    if value.same_storage(dst) {
        if value.id == dst.id {
            return;
        }
        if value.layout.same_elements(&dst.layout) {
            // Nothing to copy (the same elements in the same order; the
            // strides of size-1 dims may differ): only a recording trace
            // needs to see it (and then the node's output, a handle of
            // `dst`).
            if crate::trace::is_recording() {
                crate::trace::op(
                    "copy_",
                    || vec![dst.to_arg(), value.to_arg()],
                    || dst.handle(),
                );
            }
            return;
        }
    }
    dst.copy_in_place(value);
}

/// What an owned input's hidden caller handle becomes once the body assigns
/// the parameter a new value: a tensor no one else holds, so the exit's
/// [`write_back_owned`] writes nothing (the assigned value is fresh, which
/// the macro proves or checks, and its aliases are tracked).
///
/// ```
/// use funcz_runtime::{Tensor, rt};
/// let released: Tensor<f32> = rt::released();
/// rt::write_back_owned(&released, &Tensor::ones(&[3]));
/// assert_eq!(released.numel(), 0);
/// ```
pub fn released<T: Element>() -> Tensor<T> {
    Tensor::from_contiguous(Vec::new(), &[0])
}

dispatch_f32! {
    /// [`write_back`] for an input passed by value (`x: Tensor`): the caller's
    /// handle keeps its layout whatever the body did to its own (`t_()`,
    /// `resize_`), so only data is written, laid out as the caller's; when a
    /// `resize_` changed the number of elements, the first elements of the
    /// storage are (its growth is not visible through the caller's handle).
    ///
    /// ```
    /// use funcz_runtime::{Tensor, rt};
    /// let x = Tensor::<f32>::zeros(&[2]);
    /// let callers = x.shallow_clone();
    /// rt::write_back_owned(&x, &Tensor::from_vec(vec![1.0, 2.0, 3.0], &[3]));
    /// assert_eq!(callers.to_vec(), vec![1.0, 2.0]);
    /// ```
    pub fn write_back_owned<T: Element>(
        dst: &Tensor<T> => cast_ref,
        value: &Tensor<T> => cast_ref,
    ) = write_back_owned_any, write_back_owned_f32;
}

/// The generic body of [`write_back_owned`].
fn write_back_owned_any<T: Element>(dst: &Tensor<T>, value: &Tensor<T>) {
    if dst.storage_use_count() == 1 {
        // No other handle: nobody can see the write (a tensor the body
        // assigned to the parameter and then replaced).
        return;
    }
    if dst.shape() == value.shape() {
        write_back_any(dst, value);
        return;
    }
    // (Functional ops only: `clone` is contiguous, so `view_copy` applies.)
    let shape: Vec<i64> = dst.shape().iter().map(|&d| d as i64).collect();
    let (n, k) = (dst.numel() as i64, value.numel() as i64);
    let flat = value.clone().view_copy([-1]);
    let new = if k >= n {
        flat.narrow_copy(0, 0, n)
    } else {
        // Shrunk: the elements past its end are still the caller's.
        dst.clone().view_copy([-1]).slice_scatter(&flat, 0, 0, k, 1)
    };
    dst.copy_in_place(&new.view_copy(shape.as_slice()));
}

dispatch_f32! {
    /// [`write_back_mut`] past its first test.
    fn write_back_mut_replaced<T: Element>(
        dst: &mut Tensor<T> => cast_mut,
        value: &Tensor<T> => cast_ref,
    ) = write_back_mut_any, write_back_mut_f32;
}

/// [`write_back`] for a `&mut Tensor` input: when the body left the
/// variable holding a tensor of another shape (`*x = Tensor::zeros(..)`),
/// the caller's tensor becomes that tensor, as the original's assignment
/// through the `&mut` does; otherwise its data is written back. (The first
/// test, a value that is still the caller's tensor itself, is inlined
/// into the generated function.)
///
/// ```
/// use funcz_runtime::{Tensor, rt};
/// let mut x = Tensor::<f32>::zeros(&[3]);
/// rt::write_back_mut(&mut x, &Tensor::ones(&[2, 2]));
/// assert_eq!(x.shape(), &[2, 2]);
/// ```
#[inline]
pub fn write_back_mut<T: Element>(dst: &mut Tensor<T>, value: &Tensor<T>) {
    if value.id == dst.id && value.same_storage(dst) {
        // Still the caller's tensor itself.
        return;
    }
    write_back_mut_replaced(dst, value)
}

/// The generic body of [`write_back_mut`] past its first test.
fn write_back_mut_any<T: Element>(dst: &mut Tensor<T>, value: &Tensor<T>) {
    if !crate::dims::same_dims(dst.shape(), value.shape()) {
        *dst = value.handle();
    } else {
        write_back_any(dst, value);
    }
}

/// After a call the macro cannot see reordered or replaced the elements of
/// a collection the body tracks (`xs.swap(0, 1)`, `xs.reverse()`): each
/// element gets its own copy, so that no element shares a buffer that the
/// exit writes another caller's element into.
pub fn detach_all<T: Element>(elements: &mut [Tensor<T>]) {
    for e in elements.iter_mut() {
        *e = e.clone();
    }
}

/// [`write_back`] for each element of a slice input.
pub fn write_back_all<T: Element>(dst: &[Tensor<T>], values: &[Tensor<T>]) {
    for (d, v) in dst.iter().zip(values) {
        write_back(d, v);
    }
}

/// [`write_back_all`] for a `&mut Vec<Tensor>` input: elements the body
/// replaced are copied into the caller's tensors, and the caller's `Vec`
/// takes the length the body left (pushed tensors are handed over,
/// removed ones dropped), as the original program would have left it.
pub fn write_back_vec<T: Element>(dst: &mut Vec<Tensor<T>>, values: &[Tensor<T>]) {
    let common = dst.len().min(values.len());
    write_back_all(&dst[..common], &values[..common]);
    dst.truncate(values.len());
    dst.extend(values[common..].iter().map(Tensor::handle));
}

dispatch_f32! {
    /// Writes back an input whose layout the body changed with metadata ops
    /// (`t_`, `transpose_`, ...): the caller's tensor gets the final data of
    /// its base (`copy_`), then the layout the original program would have
    /// left it with (`as_strided_`).
    ///
    /// When `resize_` grew the storage, the base is a longer 1-D tensor: the
    /// caller's tensor is resized to it first (its storage grows, as eager).
    pub fn write_back_layout<T: Element>(
        dst: &mut Tensor<T> => cast_mut,
        base_value: &Tensor<T> => cast_ref,
        state: &Tracked => same,
    ) = write_back_layout_any, write_back_layout_f32;
}

/// The generic body of [`write_back_layout`].
fn write_back_layout_any<T: Element>(dst: &mut Tensor<T>, base_value: &Tensor<T>, state: &Tracked) {
    if base_value.shape() != dst.shape() {
        dst.resize_([base_value.numel() as i64]);
        if base_value.dim() == 1 {
            dst.copy_in_place(base_value);
        } else {
            dst.copy_in_place(&base_value.reshape([-1]));
        }
    } else {
        write_back_any(dst, base_value);
    }
    let mut layout = dst.layout;
    for m in state.chain() {
        layout = m.apply_layout(&layout);
    }
    if layout != dst.layout {
        let size: Vec<i64> = layout.shape.iter().map(|&x| x as i64).collect();
        let stride: Vec<i64> = layout.strides.iter().map(|&x| x as i64).collect();
        dst.as_strided_(size.as_slice(), stride.as_slice(), layout.offset as i64);
    }
}

/// A value from a call the macro cannot see into, which the function then
/// mutates: a tensor as it is, a reference to one as another handle of it
/// (see [`Owned`]), so that the function's variable owns what it updates.
///
/// ```
/// use funcz_runtime::{Tensor, rt};
/// fn pick(t: &Tensor<f32>) -> &Tensor<f32> {
///     t
/// }
/// let a = Tensor::<f32>::zeros(&[2]);
/// let r = rt::owned(pick(&a)); // another handle of `a`
/// assert!(r.same_storage(&a));
/// let fresh = rt::owned(a.add(1.0)); // a tensor stays as it is
/// assert_eq!(fresh.storage_use_count(), 1);
/// ```
pub fn owned<R: Owned>(value: R) -> R::Tensor {
    value.into_tensor()
}

/// What [`owned`] accepts: a tensor, or a reference to one.
pub trait Owned {
    /// The owned tensor.
    type Tensor;
    /// The tensor itself, or another handle of the referenced one.
    fn into_tensor(self) -> Self::Tensor;
}

impl<T: Element> Owned for Tensor<T> {
    type Tensor = Tensor<T>;
    fn into_tensor(self) -> Tensor<T> {
        self
    }
}

impl<T: Element> Owned for &Tensor<T> {
    type Tensor = Tensor<T>;
    fn into_tensor(self) -> Tensor<T> {
        self.handle()
    }
}

impl<T: Element> Owned for &mut Tensor<T> {
    type Tensor = Tensor<T>;
    fn into_tensor(self) -> Tensor<T> {
        self.handle()
    }
}

/// Panics if `value`, which the function got from a call the macro cannot
/// see into and then mutates, shares its storage with any other handle:
/// `#[functionalize]` treats such a value as a fresh tensor, so if it were
/// a view of an input or of another tensor of the function, its mutation
/// would not reach them as it does in the original program.
///
/// The panic points at the caller (the generated check).
#[track_caller]
pub fn check_fresh<T: Element>(name: &str, value: &Tensor<T>) {
    let n = value.storage_use_count();
    if n > 1 {
        panic!(
            "funcz: `{name}` comes from a call #[functionalize] cannot see into and shares its storage with \
             {} other handle(s) (shape {:?}); in the original, mutating it changes what they see, and the \
             functionalized function cannot write the change back to them. help: make the view in the \
             functionalized function itself (`x.narrow(..)` of a parameter `x`), or pass the tensor in as a \
             parameter (`x: &mut Tensor`) and mutate it there, or `.clone()` the call's result if the other \
             handles must not see the change",
            n - 1,
            value.shape()
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn clash(inputs: &[(&str, &dyn InputKey)]) -> Option<String> {
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            check_inputs_disjoint("f", inputs)
        }));
        r.err().map(|e| {
            e.downcast_ref::<String>()
                .cloned()
                .unwrap_or_else(|| "non-string panic".into())
        })
    }

    #[test]
    fn a_tuple_of_inputs_is_checked_like_the_slice() {
        let t: Vec<Tensor<f32>> = (0..12).map(|_| Tensor::zeros(&[2])).collect();
        let names = "a,b,c,d,e,f,g,h,i,j,k,l";
        let run = |last: &Tensor<f32>| {
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                check_inputs_disjoint_of(
                    "f",
                    names,
                    (
                        &t[0], &t[1], &t[2], &t[3], &t[4], &t[5], &t[6], &t[7], &t[8], &t[9],
                        &t[10], last,
                    ),
                )
            }))
            .err()
            .map(|e| e.downcast_ref::<String>().cloned().unwrap_or_default())
        };
        assert_eq!(run(&t[11]), None);
        let view = t[4].narrow(0, 1, 1);
        let msg = run(&view).expect("a clash");
        assert!(msg.contains("inputs `e` and `l` share storage"), "{msg}");
        // Mixed kinds: `&mut`, a collection, an optional reader.
        let (mut a, xs) = (Tensor::<f32>::zeros(&[1]), vec![view.shallow_clone()]);
        let none: Option<&Tensor<f32>> = None;
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            check_inputs_disjoint_of("f", "a,xs,o", (&&mut a, &xs, &none))
        }));
        assert!(r.is_ok());
        let some = Some(&t[4]);
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            check_inputs_disjoint_of("f", "xs,o", (&xs, &some))
        }));
        let msg = r.err().and_then(|e| e.downcast_ref::<String>().cloned());
        assert!(msg.is_some_and(|m| m.contains("`xs` and `o`")));
    }

    #[test]
    fn inputs_sharing_storage_are_refused_on_every_path() {
        let a = Tensor::<f32>::zeros(&[4]);
        let b = Tensor::<f32>::zeros(&[4]);
        let view = a.narrow(0, 1, 2);
        // Single tensors (the fast path), by reference and by `&mut`.
        assert_eq!(clash(&[("a", &&a), ("b", &&b)]), None);
        let msg = clash(&[("a", &&a), ("b", &&b), ("v", &&view)]).expect("a clash");
        assert!(msg.contains("inputs `a` and `v` share storage"), "{msg}");
        let mut b2 = b.shallow_clone();
        let msg = clash(&[("b", &&b), ("m", &&mut b2)]).expect("a clash");
        assert!(msg.contains("inputs `b` and `m` share storage"), "{msg}");
        // A collection among them (the general path).
        let xs = vec![Tensor::<f32>::zeros(&[1]), view.shallow_clone()];
        assert_eq!(clash(&[("b", &&b), ("xs", &&xs)]), None);
        let msg = clash(&[("a", &&a), ("xs", &&xs)]).expect("a clash");
        assert!(msg.contains("inputs `a` and `xs` share storage"), "{msg}");
        let msg =
            clash(&[("xs", &&xs[..]), ("ys", &&[view.shallow_clone()][..])]).expect("a clash");
        assert!(msg.contains("`xs` and `ys`"), "{msg}");
        // More single tensors than the fast path holds.
        let many: Vec<Tensor<f32>> = (0..20).map(|_| Tensor::zeros(&[1])).collect();
        let mut named: Vec<(&str, &dyn InputKey)> =
            many.iter().map(|t| ("t", t as &dyn InputKey)).collect();
        assert_eq!(clash(&named), None);
        named.push(("last", &many[3]));
        let msg = clash(&named).expect("a clash");
        assert!(msg.contains("inputs `t` and `last` share storage"), "{msg}");
    }
}
