/**
 * AWS Bedrock's runtime paths for Claude (docs/DESIGN.md "Providers"). The Anthropic SDK's Bedrock client
 * moves the model out of the body into the path, URL-encoded (`us.anthropic.claude-…-v1%3A0`, or an
 * inference profile's ARN with its `/` as `%2F`): `/model/M/invoke-with-response-stream` answers in AWS's
 * event-stream framing, `/model/M/invoke` in one JSON body. Whatever comes before `/model/` is the base
 * URL's path. Pure.
 */
import { decodeSegment, type Recognised } from "./recognised.ts";

const PATH = /^(?:\/[^/]+)*\/model\/([^/]+)\/([a-z-]+)$/;

/** What a Bedrock path asks for, or null when the path is not Bedrock's runtime. */
export function bedrockPath(pathname: string): Recognised | null {
  const m = PATH.exec(pathname);
  if (m === null) return null;
  const model = decodeSegment(m[1]);
  switch (m[2]) {
    case "invoke":
    case "invoke-with-response-stream":
      // Another vendor's model on Bedrock speaks its own format; an ARN does not say whose model it names.
      if (!isAnthropicModel(model)) return { kind: "other", provider: "bedrock", reason: "a Bedrock model that is not Anthropic's" };
      return { kind: "conversation", provider: "bedrock", model };
    case "count-tokens":
      return { kind: "count-tokens", provider: "bedrock" };
    case "converse":
    case "converse-stream":
      return { kind: "other", provider: "bedrock", reason: "Bedrock's Converse API, which the tap does not mirror" };
    default:
      return null;
  }
}

/** True for an Anthropic model id (`anthropic.claude-…`, with or without a region prefix) or an ARN, whose model is not in it. */
function isAnthropicModel(model: string): boolean {
  return model.startsWith("arn:") || /(?:^|\.)anthropic\./.test(model);
}
