//! The Kubernetes CEL library functions against the examples Kubernetes documents for them
//! (the doc comments of k8s.io/apiserver `pkg/cel/library/*.go`, and their `_test.go` tables),
//! and the check that names a function this checker lacks.

use std::sync::Arc;

use cel::{Context, Value};

use super::{environment, unsupported_function};

/// What an example evaluates to: a value, or an error.
enum Expect {
    Is(Value),
    Error,
}
use Expect::{Error, Is};

fn t() -> Expect {
    Is(Value::Bool(true))
}
fn f() -> Expect {
    Is(Value::Bool(false))
}
fn int(i: i64) -> Expect {
    Is(Value::Int(i))
}
fn string(s: &str) -> Expect {
    Is(Value::String(Arc::new(s.to_owned())))
}

fn check_table(table: &[(&str, Expect)]) {
    let env = environment();
    let mut failures = Vec::new();
    for (source, expect) in table {
        let program = env
            .compile(source)
            .unwrap_or_else(|e| panic!("{source}: {e}"));
        assert_eq!(
            unsupported_function(program.expression(), &env),
            None,
            "{source} uses only declared functions"
        );
        let context = Context::with_env(Arc::clone(&env));
        let got = program.execute(&context);
        let ok = match (expect, &got) {
            (Is(want), Ok(value)) => value == want,
            (Error, Err(_)) => true,
            _ => false,
        };
        if !ok {
            failures.push(format!("{source} gave {got:?}"));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn urls() {
    check_table(&[
        (
            "isURL('https://user:pass@example.com:80/path?query=val#fragment')",
            t(),
        ),
        ("isURL('/absolute-path')", t()),
        ("isURL('https://a:b:c/')", f()),
        ("isURL('../relative-path')", f()),
        ("url('https://a:b:c/')", Error),
        ("url('../relative-path')", Error),
        ("url('/path').getScheme()", string("")),
        ("url('https://example.com/').getScheme()", string("https")),
        (
            "url('https://example.com:80/').getHost()",
            string("example.com:80"),
        ),
        (
            "url('https://example.com/').getHost()",
            string("example.com"),
        ),
        ("url('https://[::1]:80/').getHost()", string("[::1]:80")),
        ("url('https://[::1]/').getHost()", string("[::1]")),
        ("url('/path').getHost()", string("")),
        (
            "url('https://example.com:80/').getHostname()",
            string("example.com"),
        ),
        (
            "url('https://127.0.0.1:80/').getHostname()",
            string("127.0.0.1"),
        ),
        ("url('https://[::1]:80/').getHostname()", string("::1")),
        ("url('/path').getHostname()", string("")),
        ("url('https://example.com:80/').getPort()", string("80")),
        ("url('https://example.com/').getPort()", string("")),
        ("url('/path').getPort()", string("")),
        (
            "url('https://example.com/path').getEscapedPath()",
            string("/path"),
        ),
        (
            "url('https://example.com/path with spaces/').getEscapedPath()",
            string("/path%20with%20spaces/"),
        ),
        ("url('https://example.com').getEscapedPath()", string("")),
        (
            "url('https://example.com/path?k1=a&k2=b&k2=c').getQuery() == {'k1': ['a'], 'k2': ['b', 'c']}",
            t(),
        ),
        (
            "url('https://example.com/path?key with spaces=value with spaces').getQuery() == {'key with spaces': ['value with spaces']}",
            t(),
        ),
        ("url('https://example.com/path?').getQuery() == {}", t()),
        ("url('https://example.com/path').getQuery() == {}", t()),
        (
            "url('https://example.com/') == url('https://example.com/')",
            t(),
        ),
    ]);
}

#[test]
fn regex() {
    // The documented `[0-9]*` examples give '' first in Go (an empty match at 0 is leftmost),
    // as here; `+` gives what the documentation shows.
    check_table(&[
        ("'abc 123'.find('[0-9]+')", string("123")),
        ("'abc 123'.find('[0-9]*')", string("")),
        ("'abc 123'.find('xyz')", string("")),
        ("'123 abc 456'.findAll('[0-9]+') == ['123', '456']", t()),
        ("'123 abc 456'.findAll('[0-9]+', 1) == ['123']", t()),
        ("'123 abc 456'.findAll('xyz') == []", t()),
        ("'abc'.find('[')", Error),
    ]);
}

#[test]
fn lists() {
    check_table(&[
        ("[1, 2, 3].isSorted()", t()),
        ("['a', 'b', 'b', 'c'].isSorted()", t()),
        ("[2.0, 1.0].isSorted()", f()),
        ("[1].isSorted()", t()),
        ("[].isSorted()", t()),
        ("[1, 3].sum()", int(4)),
        ("[1.0, 3.0].sum()", Is(Value::Float(4.0))),
        (
            "[duration('1m'), duration('1s')].sum() == duration('1m1s')",
            t(),
        ),
        ("[].sum()", int(0)),
        ("[1, 3].min()", int(1)),
        ("[1, 3].max()", int(3)),
        ("[].min()", Error),
        ("[1].min()", int(1)),
        ("([0] + []).min()", int(0)),
        ("[1, 2, 2, 3].indexOf(2)", int(1)),
        ("['a', 'b', 'b', 'c'].lastIndexOf('b')", int(2)),
        ("[1.0].indexOf(1.1)", int(-1)),
        ("[].indexOf('string')", int(-1)),
        // cel-go's lists extension (Kubernetes 1.34).
        ("[1, 2].first() == optional.of(1)", t()),
        ("[].last() == optional.none()", t()),
        ("[1, 2, 3].slice(1, 2) == [2]", t()),
        ("[3, 1, 2].sort() == [1, 2, 3]", t()),
    ]);
}

#[test]
fn quantities() {
    check_table(&[
        ("isQuantity('1.3G')", t()),
        ("isQuantity('1.3Gi')", t()),
        ("isQuantity('1,3G')", f()),
        ("isQuantity('10000k')", t()),
        ("isQuantity('200K')", f()),
        ("isQuantity('Three')", f()),
        ("isQuantity('Mi')", f()),
        ("isQuantity('20')", t()),
        ("isQuantity('20Mo')", f()),
        ("isQuantity('10Mm')", f()),
        ("quantity('200K')", Error),
        ("quantity('Three')", Error),
        ("quantity('Mi')", Error),
        ("quantity('10Mo')", Error),
        ("quantity('200M') == quantity('200M')", t()),
        (
            "quantity('200M') == quantity('0.2G') && quantity('0.2G') == quantity('200M')",
            t(),
        ),
        (
            "quantity('2M') == quantity('0.002G') && quantity('2000k') == quantity('2M')",
            t(),
        ),
        ("quantity('200M') == quantity('0.3G')", f()),
        ("quantity('50000000G').isInteger()", t()),
        ("quantity('50k').isInteger()", t()),
        ("quantity('50').isInteger()", t()),
        (
            "quantity('9999999999999999999999999999999999999G').asInteger()",
            Error,
        ),
        (
            "quantity('9999999999999999999999999999999999999G').isInteger()",
            f(),
        ),
        ("quantity('50k').asInteger() == 50000", t()),
        (
            "quantity('50k').sub(20000).asApproximateFloat() == 30000.0",
            t(),
        ),
        (
            "quantity('50.703k').asApproximateFloat()",
            Is(Value::Float(50703.0)),
        ),
        ("quantity('50k').add(20) == quantity('50020')", t()),
        (
            "quantity('50k').add(quantity('20')) == quantity('50.02k')",
            t(),
        ),
        ("quantity('50k').add(20).isLessThan(quantity('50020'))", f()),
        (
            "quantity('50k').sub(quantity('20')) == quantity('49.98k')",
            t(),
        ),
        ("quantity('50k').sub(20) == quantity('49980')", t()),
        ("quantity('50k').sub(20000) == quantity('30k')", t()),
        (
            "quantity('50k').add(20).sub(quantity('100k')).asInteger()",
            int(-49980),
        ),
        (
            "quantity('50k').add(20).sub(quantity('100k')).sub(-50000) == quantity('20')",
            t(),
        ),
        ("quantity('200M').compareTo(quantity('0.2G'))", int(0)),
        ("quantity('50M').compareTo(quantity('50Mi'))", int(-1)),
        ("quantity('50Mi').compareTo(quantity('50M'))", int(1)),
        ("quantity('150Mi').isGreaterThan(quantity('100Mi'))", t()),
        ("quantity('50Mi').isGreaterThan(quantity('100Mi'))", f()),
        ("quantity('50M').isLessThan(quantity('100M'))", t()),
        ("quantity('100M').isLessThan(quantity('50M'))", f()),
        ("quantity('50M').isLessThan(quantity('50Mi'))", t()),
        (
            "[quantity('9999999999999999999999999999999999999')].all(x, x.add(quantity('1')).compareTo(x.add(quantity('2'))) == -1)",
            t(),
        ),
        // apimachinery: finer than 1n rounds up; `sign` of negative values; exponents.
        ("quantity('0.0000000001') == quantity('1n')", t()),
        ("quantity('-5m').sign()", int(-1)),
        ("quantity('1e3') == quantity('1k')", t()),
        ("quantity('1E') == quantity('1000P')", t()),
    ]);
}

#[test]
fn sets() {
    // cel-go ext/sets.go documentation.
    check_table(&[
        ("sets.contains([], [])", t()),
        ("sets.contains([], [1])", f()),
        ("sets.contains([1, 2, 3, 4], [2, 3])", t()),
        ("sets.contains([1, 2.0, 3u], [1.0, 2u, 3])", t()),
        ("sets.equivalent([], [])", t()),
        ("sets.equivalent([1], [1, 1])", t()),
        ("sets.equivalent([1], [1u, 1.0])", t()),
        ("sets.equivalent([1, 2, 3], [3u, 2.0, 1])", t()),
        ("sets.intersects([1], [])", f()),
        ("sets.intersects([1], [1, 2])", t()),
        ("sets.intersects([[1], [2, 3]], [[1, 2], [2, 3.0]])", t()),
    ]);
}

#[test]
fn ips_and_cidrs() {
    check_table(&[
        ("isIP('127.0.0.1')", t()),
        ("isIP('::1')", t()),
        ("isIP('127.0.0.256')", f()),
        ("isIP(':::1')", f()),
        ("isIP('01.1.1.1')", f()),
        ("isIP('::ffff:1.2.3.4')", f()),
        ("isIP('fe80::1%eth0')", f()),
        ("ip('127.0.0.256')", Error),
        ("ip.isCanonical('127.0.0.1')", t()),
        ("ip.isCanonical('2001:db8::abcd')", t()),
        ("ip.isCanonical('2001:DB8::ABCD')", f()),
        ("ip.isCanonical('2001:db8::0:0:0:abcd')", f()),
        ("ip('127.0.0.1').family()", int(4)),
        ("ip('::1').family()", int(6)),
        ("ip('0.0.0.0').isUnspecified()", t()),
        ("ip('127.0.0.1').isUnspecified()", f()),
        ("ip('::').isUnspecified()", t()),
        ("ip('::1').isUnspecified()", f()),
        ("ip('127.0.0.1').isLoopback()", t()),
        ("ip('192.168.0.1').isLoopback()", f()),
        ("ip('::1').isLoopback()", t()),
        ("ip('2001:db8::abcd').isLoopback()", f()),
        ("ip('224.0.0.1').isLinkLocalMulticast()", t()),
        ("ip('224.0.1.1').isLinkLocalMulticast()", f()),
        ("ip('ff02::1').isLinkLocalMulticast()", t()),
        ("ip('fd00::1').isLinkLocalMulticast()", f()),
        ("ip('169.254.169.254').isLinkLocalUnicast()", t()),
        ("ip('192.168.0.1').isLinkLocalUnicast()", f()),
        ("ip('fe80::1').isLinkLocalUnicast()", t()),
        ("ip('fd80::1').isLinkLocalUnicast()", f()),
        ("ip('192.168.0.1').isGlobalUnicast()", t()),
        ("ip('255.255.255.255').isGlobalUnicast()", f()),
        ("ip('2001:db8::abcd').isGlobalUnicast()", t()),
        ("ip('ff00::1').isGlobalUnicast()", f()),
        ("string(ip('2001:DB8::1'))", string("2001:db8::1")),
        ("isCIDR('192.168.0.0/16')", t()),
        ("isCIDR('::1/128')", t()),
        ("isCIDR('192.168.0.0/33')", f()),
        ("isCIDR('::1/129')", f()),
        ("cidr('192.168.0.0/33')", Error),
        ("cidr('192.168.0.0/24').containsIP(ip('192.168.0.1'))", t()),
        ("cidr('192.168.0.0/24').containsIP(ip('192.168.1.1'))", f()),
        ("cidr('192.168.0.0/24').containsIP('192.168.0.1')", t()),
        ("cidr('192.168.0.0/24').containsIP('192.168.1.1')", f()),
        (
            "cidr('192.168.0.0/16').containsCIDR(cidr('192.168.10.0/24'))",
            t(),
        ),
        (
            "cidr('192.168.1.0/24').containsCIDR(cidr('192.168.2.0/24'))",
            f(),
        ),
        (
            "cidr('192.168.0.0/16').containsCIDR('192.168.10.0/24')",
            t(),
        ),
        ("cidr('192.168.1.0/24').containsCIDR('192.168.2.0/24')", f()),
        ("cidr('192.168.0.1/24').ip() == ip('192.168.0.1')", t()),
        ("cidr('192.168.0.1/24').ip().family()", int(4)),
        ("cidr('::1/128').ip() == ip('::1')", t()),
        ("cidr('::1/128').ip().family()", int(6)),
        (
            "cidr('192.168.0.0/24').masked() == cidr('192.168.0.0/24')",
            t(),
        ),
        (
            "cidr('192.168.0.1/24').masked() == cidr('192.168.0.0/24')",
            t(),
        ),
        (
            "cidr('192.168.0.0/24') == cidr('192.168.0.0/24').masked()",
            t(),
        ),
        (
            "cidr('192.168.0.1/24') == cidr('192.168.0.1/24').masked()",
            f(),
        ),
        ("cidr('192.168.0.0/16').prefixLength()", int(16)),
        ("cidr('::1/128').prefixLength()", int(128)),
        ("string(cidr('192.168.0.0/16'))", string("192.168.0.0/16")),
    ]);
}

#[test]
fn semvers() {
    check_table(&[
        ("isSemver('1.0.0')", t()),
        ("isSemver('0.1.0-alpha.1')", t()),
        ("isSemver('hello')", f()),
        ("isSemver('v1.0')", f()),
        ("isSemver('v1.0', true)", t()),
        ("isSemver('1.0', true)", t()),
        ("isSemver('01.01.01', true)", t()),
        ("isSemver('01.01.01')", f()),
        ("semver('200K')", Error),
        ("semver('v1.0.0', true) == semver('1.0.0')", t()),
        ("semver('01.01.01', true) == semver('1.1.1')", t()),
        ("semver('1.2.3').major()", int(1)),
        ("semver('1.2.3').minor()", int(2)),
        ("semver('1.2.3').patch()", int(3)),
        ("semver('1.2.3').compareTo(semver('1.2.3'))", int(0)),
        ("semver('1.2.3').compareTo(semver('2.0.0'))", int(-1)),
        ("semver('1.2.3').compareTo(semver('0.1.2'))", int(1)),
        ("semver('1.0.0-alpha').isLessThan(semver('1.0.0'))", t()),
        (
            "semver('1.0.0-alpha.1').isLessThan(semver('1.0.0-alpha.beta'))",
            t(),
        ),
        ("semver('2.0.0').isGreaterThan(semver('1.9.9'))", t()),
    ]);
}

#[test]
fn formats() {
    check_table(&[
        (
            "format.dns1123Label().validate('my-name') == optional.none()",
            t(),
        ),
        ("format.dns1123Label().validate('My_Name').hasValue()", t()),
        (
            "format.dns1123Label().validate('aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa').hasValue()",
            t(),
        ),
        (
            "format.dns1123LabelPrefix().validate('my-prefix-') == optional.none()",
            t(),
        ),
        (
            "format.dns1123Label().validate('my-prefix-').hasValue()",
            t(),
        ),
        ("format.dns1035Label().validate('1abc').hasValue()", t()),
        (
            "format.dns1123Subdomain().validate('a.example.com') == optional.none()",
            t(),
        ),
        ("format.dns1123Subdomain().validate('a..b').hasValue()", t()),
        (
            "format.qualifiedName().validate('example.com/Name') == optional.none()",
            t(),
        ),
        ("format.labelValue().validate('-x').hasValue()", t()),
        (
            "format.uri().validate('https://example.com/x') == optional.none()",
            t(),
        ),
        ("format.uri().validate('../x').hasValue()", t()),
        (
            "format.uuid().validate('123e4567-e89b-12d3-a456-426614174000') == optional.none()",
            t(),
        ),
        ("format.byte().validate('aGVsbG8=') == optional.none()", t()),
        ("format.date().validate('2024-02-30').hasValue()", t()),
        ("format.named('dns1123Label').hasValue()", t()),
        ("format.named('noSuchFormat').hasValue()", f()),
        (
            "format.named('labelValue').value().validate('ok') == optional.none()",
            t(),
        ),
        ("format.datetime().validate('2024-01-01T00:00:00Z')", Error),
    ]);
}

#[test]
fn strings_extension() {
    check_table(&[
        ("'TacoCat'.lowerAscii()", string("tacocat")),
        ("'a,b'.split(',') == ['a', 'b']", t()),
        ("['a', 'b'].join('-')", string("a-b")),
        ("'hello'.charAt(1)", string("e")),
        ("'  x '.trim()", string("x")),
    ]);
}

#[test]
fn a_function_this_checker_lacks_is_named_wherever_it_sits() {
    let env = environment();
    let reason = |source: &str| {
        let program = env.compile(source).unwrap();
        unsupported_function(program.expression(), &env)
    };
    let missing = reason("true || noSuchFunction(self)").expect("named");
    assert!(missing.contains("`noSuchFunction`"), "{missing}");
    let two_variable = reason("self.all(k, v, v > 0)").expect("named");
    assert!(two_variable.contains("two-variable"), "{two_variable}");
    let member = reason("self.x.noSuchMethod()").expect("named");
    assert!(member.contains("`noSuchMethod`"), "{member}");
    // Declared ones, variables of comprehensions included, are not.
    for source in [
        "self.all(x, x.startsWith('a')) && self.map(y, y.size()).sum() > 0",
        "sets.contains(self, ['a']) && url(self[0]).getHost() != ''",
        "ip.isCanonical(self[0]) && optional.of(1).hasValue()",
        "!format.dns1123Label().validate(self[0]).hasValue()",
    ] {
        assert_eq!(reason(source), None, "{source}");
    }
}
