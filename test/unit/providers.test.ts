// How a request is recognised (docs/DESIGN.md "Providers"): which API, which model, whether it is a
// conversation's turn; the shape a path is named by (no id in it); which bodies look like a conversation;
// and what base-URL mode refuses to forward to AWS.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { looksLikeConversation, pathShape, recognise, responseFraming, responseRequestId, UNKNOWN_PATH } from "../../src/protocol/providers/recognise.ts";
import { awsRefusal, isAwsHost, signedHeaderNames } from "../../src/protocol/headers.ts";

const VERTEX = "/v1/projects/my-proj-42/locations/us-east5/publishers/anthropic/models";
const enc = (s: string) => new TextEncoder().encode(s);

describe("recognise()", () => {
  it("the Messages API: POST /v1/messages is a conversation whose model is the body's; its token count is not", () => {
    assert.deepEqual(recognise("POST", "/v1/messages"), { kind: "conversation", provider: "anthropic", model: null });
    assert.deepEqual(recognise("POST", "/v1/messages/count_tokens"), { kind: "count-tokens", provider: "anthropic" });
    assert.equal(recognise("GET", "/v1/messages").kind, "other");
  });

  it("Vertex: :streamRawPredict and :rawPredict are conversations, the model taken from the path", () => {
    assert.deepEqual(recognise("POST", `${VERTEX}/claude-sonnet-4-5@20250929:streamRawPredict`), {
      kind: "conversation",
      provider: "vertex",
      model: "claude-sonnet-4-5@20250929",
    });
    assert.deepEqual(recognise("POST", `${VERTEX}/claude-opus-4-1%4020250805:rawPredict`), {
      kind: "conversation",
      provider: "vertex",
      model: "claude-opus-4-1@20250805",
    });
    assert.deepEqual(
      recognise("POST", "/projects/p/locations/global/publishers/anthropic/models/claude-x:rawPredict").kind,
      "conversation",
      "without a base path",
    );
  });

  it("Vertex: counting tokens, other publishers and other methods are not conversations", () => {
    assert.deepEqual(recognise("POST", `${VERTEX}/count-tokens:rawPredict`), { kind: "count-tokens", provider: "vertex" });
    const gemini = recognise("POST", "/v1/projects/p/locations/r/publishers/google/models/gemini-2:streamGenerateContent");
    assert.equal(gemini.kind, "other");
    assert.equal(gemini.kind === "other" && gemini.provider, "vertex");
    assert.equal(recognise("POST", `${VERTEX}/claude-x:predict`).kind, "other");
    assert.equal(recognise("GET", `${VERTEX}/claude-x:rawPredict`).kind, "other");
  });

  it("Bedrock: invoke-with-response-stream and invoke are conversations, the model URL-decoded from the path", () => {
    assert.deepEqual(recognise("POST", "/model/us.anthropic.claude-sonnet-4-5-20250929-v1%3A0/invoke-with-response-stream"), {
      kind: "conversation",
      provider: "bedrock",
      model: "us.anthropic.claude-sonnet-4-5-20250929-v1:0",
    });
    assert.deepEqual(recognise("POST", "/model/anthropic.claude-3-haiku-20240307-v1:0/invoke"), {
      kind: "conversation",
      provider: "bedrock",
      model: "anthropic.claude-3-haiku-20240307-v1:0",
    });
    const arn = "arn:aws:bedrock:us-east-1:123456789012:application-inference-profile/abc123";
    assert.deepEqual(recognise("POST", `/gateway/model/${encodeURIComponent(arn)}/invoke`), { kind: "conversation", provider: "bedrock", model: arn });
  });

  it("Bedrock: another vendor's model, the Converse API, token counts and the control plane are not conversations", () => {
    assert.equal(recognise("POST", "/model/amazon.nova-pro-v1%3A0/invoke").kind, "other");
    assert.equal(recognise("POST", "/model/us.anthropic.claude-x/converse-stream").kind, "other");
    assert.deepEqual(recognise("POST", "/model/us.anthropic.claude-x/count-tokens"), { kind: "count-tokens", provider: "bedrock" });
    assert.deepEqual(recognise("GET", "/inference-profiles"), { kind: "other", provider: null, reason: UNKNOWN_PATH });
  });

  it("a path it does not know is 'other', with a reason", () => {
    assert.deepEqual(recognise("POST", "/v2/messages"), { kind: "other", provider: null, reason: UNKNOWN_PATH });
    assert.deepEqual(recognise("POST", "/anthropic/v1/messages"), { kind: "other", provider: null, reason: UNKNOWN_PATH });
  });

  it("a malformed percent-encoding is kept as it is, never thrown", () => {
    assert.deepEqual(recognise("POST", "/model/us.anthropic.claude-%E0%A4%A/invoke"), {
      kind: "conversation",
      provider: "bedrock",
      model: "us.anthropic.claude-%E0%A4%A",
    });
  });
});

describe("pathShape()", () => {
  it("keeps the APIs' words and versions, and replaces every other segment by *", () => {
    assert.equal(pathShape(`${VERTEX}/claude-x:streamRawPredict`), "/v1/projects/*/locations/*/publishers/anthropic/models/*:streamRawPredict");
    assert.equal(pathShape("/model/arn%3Aaws%3Abedrock%3Aus-east-1%3A1234%3Afoo/invoke"), "/model/*/invoke");
    assert.equal(pathShape("/v2/messages"), "/v2/messages");
    assert.equal(pathShape("/v1beta1/chat/completions"), "/v1beta1/chat/completions");
    assert.equal(pathShape("/users/alice/secret-token-123:run"), "/*/*/*");
    assert.equal(pathShape("/model/us.anthropic.claude-x-v1:0/invoke"), "/model/*/invoke");
  });

  it("bounds a long path", () => {
    assert.equal(pathShape("/a".repeat(40)), "/" + Array(12).fill("*").join("/") + "/…");
    assert.equal(pathShape("/"), "/");
  });
});

describe("looksLikeConversation()", () => {
  it("is true for a JSON object with a top-level messages array, wherever it sits", () => {
    assert.equal(looksLikeConversation(enc('{"messages":[]}')), true);
    assert.equal(looksLikeConversation(enc(' {"model":"x", "max_tokens": 1,\n "messages" : [{"role":"user","content":"hi"}]}')), true);
  });
  it("is false for anything else", () => {
    for (const body of ['{"messages":"no"}', '{"prompt":"x"}', '{"a":{"messages":[]}}', "[1]", "not json", '{"messages":[', ""]) {
      assert.equal(looksLikeConversation(enc(body)), false, body);
    }
  });
});

describe("awsRefusal()", () => {
  const signed = "AWS4-HMAC-SHA256 Credential=AKIA/20260101/us-east-1/bedrock/aws4_request, SignedHeaders=host;x-amz-date, Signature=abc";
  it("refuses a request signed with SigV4 (for the tap's own host), whatever the upstream, naming proxy mode", () => {
    for (const upstream of ["https://bedrock-runtime.us-east-1.amazonaws.com", "http://127.0.0.1:9999"]) {
      const r = awsRefusal(new Headers({ authorization: signed }), upstream);
      assert.equal(r?.reason, "signed for the tap's address");
      assert.match(r!.message, /proxy mode \(HTTPS_PROXY\)/);
      assert.doesNotMatch(r!.message, /AKIA|Signature=/, "no part of the credential is repeated");
    }
  });
  it("refuses a request with no credentials when the upstream is AWS; forwards one to any other upstream", () => {
    assert.equal(awsRefusal(new Headers(), "https://bedrock-runtime.eu-west-1.amazonaws.com")?.reason, "no credentials for AWS");
    assert.equal(awsRefusal(new Headers(), "http://127.0.0.1:9999"), null);
    assert.equal(awsRefusal(new Headers(), "https://api.anthropic.com"), null);
  });
  it("forwards a bearer token (a Bedrock API key, a Google token) and an API key untouched", () => {
    assert.equal(awsRefusal(new Headers({ authorization: "Bearer bedrock-api-key-abc" }), "https://bedrock-runtime.us-east-1.amazonaws.com"), null);
    assert.equal(awsRefusal(new Headers({ "x-api-key": "sk-x", authorization: "Bearer ya29.x" }), "https://us-east5-aiplatform.googleapis.com"), null);
  });
  it("reads the headers a SigV4 signature covers, and none of a request not signed so", () => {
    assert.deepEqual([...signedHeaderNames(new Headers({ authorization: signed }))], ["host", "x-amz-date"]);
    assert.deepEqual([...signedHeaderNames(new Headers({ authorization: "Bearer SignedHeaders=host" }))], []);
    assert.deepEqual([...signedHeaderNames(new Headers())], []);
  });
  it("knows AWS's hosts", () => {
    assert.equal(isAwsHost("bedrock-runtime.us-east-1.amazonaws.com"), true);
    assert.equal(isAwsHost("bedrock-runtime.cn-north-1.amazonaws.com.cn:443"), true);
    assert.equal(isAwsHost("amazonaws.com.evil.example"), false);
    assert.equal(isAwsHost("notamazonaws.com"), false);
  });
});

describe("the answer's head", () => {
  it("tells SSE, AWS's event stream and JSON apart by content type", () => {
    assert.equal(responseFraming("text/event-stream; charset=utf-8"), "sse");
    assert.equal(responseFraming("application/vnd.amazon.eventstream"), "eventstream");
    assert.equal(responseFraming("application/json"), "json");
    assert.equal(responseFraming(null), "json");
  });
  it("takes the request id from request-id, else x-amzn-requestid (as Claude Code records it)", () => {
    assert.equal(responseRequestId(new Headers({ "request-id": "req_1", "x-amzn-requestid": "a" })), "req_1");
    assert.equal(responseRequestId(new Headers({ "x-amzn-requestid": "amzn-1" })), "amzn-1");
    assert.equal(responseRequestId(new Headers({ "request-id": "", "x-amzn-requestid": "amzn-2" })), "amzn-2", "an empty one is none");
    assert.equal(responseRequestId(new Headers()), null);
  });
});
