import { h } from "../dom";
import { badge, time } from "../format";
import { answerOf, api } from "../services";
import { empty, link, table } from "../ui";
import { retryButton } from "./retry";

/**
 * U7 "Did the warehouse hear of order N?": the order's outgoing deliveries, one table per
 * endpoint (named by its description), each with its status, attempts, last status code and
 * "Retry". An endpoint with no row here was never sent this order's events.
 */
export async function deliveriesOfOrder(place: Element, orderId: number) {
  const { items } = await answerOf(
    api().api.orders({ order_id: orderId }).deliveries.get(),
    "Listing the order's webhook deliveries",
  );
  if (!items.length) {
    place.replaceChildren(
      empty("No webhook delivery for this order: no endpoint was subscribed to its events."),
    );
    return;
  }
  const byEndpoint = Map.groupBy(items, (delivery) => delivery.endpoint_id);
  place.replaceChildren(
    ...[...byEndpoint].map(([endpointId, deliveries]) => {
      const first = deliveries[0];
      const name = first.endpoint_description || first.endpoint_url;
      return h(
        "section",
        { class: "endpoint-deliveries", "aria-label": `Deliveries to ${name}` },
        h(
          "h3",
          {},
          link(`/console/webhooks/${endpointId}`, name),
          first.endpoint_description
            ? h("span", { class: "muted" }, ` ${first.endpoint_url}`)
            : null,
        ),
        table(
          ["Event", "Status", "Attempts", "Last status code", "Next attempt", "Action"],
          deliveries.map((delivery) => [
            delivery.event_type,
            badge(delivery.status),
            String(delivery.attempts),
            delivery.last_status_code === null ? "—" : String(delivery.last_status_code),
            time(delivery.next_attempt_at),
            retryButton(endpointId, delivery.id, { delivered: delivery.status === "succeeded" }),
          ]),
          `Deliveries of order ${orderId} to ${name}`,
        ),
      );
    }),
  );
}
