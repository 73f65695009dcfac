/* Broker URL parsing: both Pegasus forms, defaults, bad URLs, redaction. */
#include "testutil.h"
#include "url.h"

#include <stdlib.h>
#include <string.h>

static pano_amqp_url parse_ok(const char *text)
{
    pano_amqp_url u;
    char err[512] = "";
    ck_assert_msg(pano_amqp_url_parse(text, &u, err, sizeof err) == 0, "%s: %s", text, err);
    return u;
}

static void parse_fails(const char *text, const char *expected_fragment)
{
    pano_amqp_url u;
    char err[512] = "";
    ck_assert_msg(pano_amqp_url_parse(text, &u, err, sizeof err) < 0, "accepted %s", text);
    ck_assert_msg(strstr(err, expected_fragment), "'%s' -> '%s' lacks '%s'", text, err,
                  expected_fragment);
    ck_assert_msg(!strstr(err, "s3cret"), "password leaked: %s", err);
}

START_TEST(pegasus_form_with_vhost_and_exchange)
{
    pano_amqp_url u = parse_ok("amqp://panorama:pan%40rama@iris.isi.edu:5674/panorama/monitoring");
    ck_assert(!u.tls);
    ck_assert_str_eq(u.host, "iris.isi.edu");
    ck_assert_int_eq(u.port, 5674);
    ck_assert_str_eq(u.user, "panorama");
    ck_assert_str_eq(u.password, "pan@rama");
    ck_assert_str_eq(u.vhost, "panorama");
    ck_assert_str_eq(u.exchange, "monitoring");
    ck_assert(!u.from_management_api);
    pano_amqp_url_free(&u);
}
END_TEST

START_TEST(defaults)
{
    pano_amqp_url u = parse_ok("amqps://broker.example.org");
    ck_assert(u.tls);
    ck_assert_int_eq(u.port, 5671);
    ck_assert_str_eq(u.user, "guest");
    ck_assert_str_eq(u.password, "guest");
    ck_assert_str_eq(u.vhost, "/");
    ck_assert_str_eq(u.exchange, PANO_AMQP_DEFAULT_EXCHANGE);
    ck_assert_int_eq(u.heartbeat, -1);
    pano_amqp_url_free(&u);

    /* One segment is the exchange (Pegasus docs); an empty vhost is "/";
     * %2F decodes to "/". */
    u = parse_ok("amqp://h/workflows");
    ck_assert_str_eq(u.vhost, "/");
    ck_assert_str_eq(u.exchange, "workflows");
    pano_amqp_url_free(&u);
    u = parse_ok("amqp://guest:guest@127.0.0.1:5672/%2f");
    ck_assert_str_eq(u.vhost, "/");
    ck_assert_str_eq(u.exchange, PANO_AMQP_DEFAULT_EXCHANGE);
    pano_amqp_url_free(&u);
    u = parse_ok("amqp://h//workflows");
    ck_assert_str_eq(u.vhost, "/");
    pano_amqp_url_free(&u);
    u = parse_ok("amqp://h/%2Fprod/workflows?heartbeat=10&connection_timeout=2.5");
    ck_assert_str_eq(u.vhost, "/prod");
    ck_assert_int_eq(u.heartbeat, 10);
    ck_assert(u.connection_timeout == 2.5);
    pano_amqp_url_free(&u);
    u = parse_ok("amqp://[::1]:5673/v/x");
    ck_assert_str_eq(u.host, "::1");
    ck_assert_int_eq(u.port, 5673);
    pano_amqp_url_free(&u);
    /* The user info ends at the last '@'; the scheme is case-insensitive;
     * an empty port is the default; query and fragment end the path. */
    u = parse_ok("AMQP://us%3Ar:p:w@x@h:/v/x?heartbeat=5#frag");
    ck_assert_str_eq(u.user, "us:r");
    ck_assert_str_eq(u.password, "p:w@x");
    ck_assert_str_eq(u.host, "h");
    ck_assert_int_eq(u.port, 5672);
    ck_assert_str_eq(u.exchange, "x");
    ck_assert_int_eq(u.heartbeat, 5);
    pano_amqp_url_free(&u);
    /* A user without a password has an empty one. */
    u = parse_ok("amqp://bob@10.0.0.1#x");
    ck_assert_str_eq(u.user, "bob");
    ck_assert_str_eq(u.password, "");
    ck_assert_str_eq(u.host, "10.0.0.1");
    ck_assert_str_eq(u.exchange, PANO_AMQP_DEFAULT_EXCHANGE);
    pano_amqp_url_free(&u);
}
END_TEST

START_TEST(panorama_management_api_form)
{
    pano_amqp_url u = parse_ok(
        "rabbitmqs://panorama:s3cret@iris.isi.edu:15671/api/exchanges/panorama/monitoring/publish");
    ck_assert(u.tls);
    ck_assert(u.from_management_api);
    ck_assert_int_eq(u.port, 5671); /* the AMQP port, not the management port */
    ck_assert_str_eq(u.vhost, "panorama");
    ck_assert_str_eq(u.exchange, "monitoring");
    ck_assert_str_eq(u.password, "s3cret");
    pano_amqp_url_free(&u);
    u = parse_ok("rabbitmq://u:p@h:15672/api/exchanges/%2F/monitoring/publish");
    ck_assert_int_eq(u.port, 5672);
    ck_assert_str_eq(u.vhost, "/");
    pano_amqp_url_free(&u);
}
END_TEST

START_TEST(bad_urls_have_clear_errors)
{
    parse_fails("amqp://", "no host");
    parse_fails("amqp:///vhost/x", "no host");
    parse_fails("amqp://u:s3cret@h:99999/v/x", "bad port '99999'");
    parse_fails("amqp://u:s3cret@h:0/v/x", "bad port '0'");
    parse_fails("amqp://u:s3cret@h:5672x/v/x", "bad port '5672x'");
    parse_fails("amqp://u:s3cret@[::1/v/x", "unterminated IPv6");
    parse_fails("amqp://u:s3cret@[::1]x/v/x", "bad host");
    parse_fails("amqp://u:s3cret@h%41/v/x", "bad host");
    parse_fails("amqp://u:s3cret@h st/v/x", "spaces or control");
    parse_fails("amqp://u%00:s3cret@h/v/x", "percent-encoding in the user info");
    parse_fails("://h/v/x", "no scheme");
    parse_fails("amqp://u:s3cret@h:abc/v/x", "amqp://u:***@h");
    parse_fails("http://u:s3cret@h/v/x", "unknown scheme 'http'");
    parse_fails("amqp://u:s3cret@h/a/b/c", "the path must be");
    parse_fails("amqp://h/v/bad%20name", "exchange name");
    parse_fails("rabbitmq://u:s3cret@h:15672/api/queues/v/x/get", "/api/exchanges/");
    parse_fails("amqp://h/v/x?heartbeat=-3", "heartbeat");
    parse_fails("not a url", "bad broker URL");
}
END_TEST

START_TEST(percent_decoding)
{
    char *d = pano_url_decode("a%2Fb%2fc%zz%4", 14);
    ck_assert_str_eq(d, "a/b/c%zz%4");
    free(d);
    d = pano_url_decode("x%41yz", 4); /* only len bytes */
    ck_assert_str_eq(d, "xA");
    free(d);
    ck_assert_ptr_null(pano_url_decode("a%00b", 5));
}
END_TEST

START_TEST(redaction_hides_only_the_password)
{
    char out[256];
    pano_url_redact("amqp://user:s3cret@host:5672/v/x", out, sizeof out);
    ck_assert_str_eq(out, "amqp://user:***@host:5672/v/x");
    pano_url_redact("amqp://user@host/v/x", out, sizeof out);
    ck_assert_str_eq(out, "amqp://user@host/v/x");
    pano_url_redact("amqp://host/x?a=b@c:d", out, sizeof out);
    ck_assert_str_eq(out, "amqp://host/x?a=b@c:d");
    pano_url_redact("amqp://u:p@ss@host/", out, sizeof out);
    ck_assert_str_eq(out, "amqp://u:***@host/");
}
END_TEST

int main(void)
{
    Suite *s = suite_create("url");
    TCase *tc = tcase_create("amqp");
    tcase_add_test(tc, pegasus_form_with_vhost_and_exchange);
    tcase_add_test(tc, defaults);
    tcase_add_test(tc, panorama_management_api_form);
    tcase_add_test(tc, bad_urls_have_clear_errors);
    tcase_add_test(tc, percent_decoding);
    tcase_add_test(tc, redaction_hides_only_the_password);
    suite_add_tcase(s, tc);
    return pano_test_run(s);
}
