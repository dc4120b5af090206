package web

// Short is short, for the tests of package web_test.
var Short = short
