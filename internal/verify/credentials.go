package verify

// apolloUser is the Redis ACL user the instances connect as, with a
// password from a file (--redis-password-file) and exactly Apollo's
// rights (redisstore.ACLRules: a command sent without its right fails the
// run), as in production: the
// harness keeps the default user (drill.Credentials), so that a fault on
// Apollo's credentials (handshake, password-rotation, rights-revoked) leaves its own
// reads alone.
const apolloUser = "apollo"
